// npumem: the command-line front end (replay, plan, compare, smi, mon, viz, ...).
#include <iostream>

#include "commands.h"
#include "npumem/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"npumem: memory manager for AI accelerators"};
  app.require_subcommand(1);
  int exit_code = npumem::cli::kExitOk;
  npumem::cli::add_replay_command(app, exit_code);
  npumem::cli::add_plan_command(app, exit_code);
  npumem::cli::add_viz_command(app, exit_code);
  npumem::cli::add_smi_command(app, exit_code);
  npumem::cli::add_mon_command(app, exit_code);
  npumem::cli::add_compare_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : npumem::cli::kExitBadInput;
  } catch (const npumem::OutOfMemory& e) {
    std::cerr << "npumem: " << e.what() << "\n";
    return npumem::cli::kExitOutOfMemory;
  } catch (const npumem::Error& e) {
    std::cerr << "npumem: " << e.what() << "\n";
    return npumem::cli::kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a defect, but still a message and an exit code, not an abort.
    std::cerr << "npumem: internal error: " << e.what() << "\n";
    return npumem::cli::kExitFailure;
  }
  return exit_code;
}
