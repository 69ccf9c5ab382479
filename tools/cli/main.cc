// npumem: the command-line front end (replay, plan, compare, advise, smi, mon, viz, ...).
#include <iostream>
#include <string>

#include "commands.h"
#include "npumem/errors.h"
#include "npumem/npumem.h"

namespace {

std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return names;
}

// `npumem help [SUBCOMMAND]` prints the help; a first word that is no subcommand is
// named as such (CLI11 alone would only say a subcommand is required). Returns the
// exit code when the arguments were handled here, -1 otherwise.
int handle_help_or_unknown(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return -1;
  const std::string word = argv[1];
  if (word == "help") {
    const CLI::App* topic = nullptr;
    if (argc > 2) {
      try {
        topic = app.get_subcommand(argv[2]);
      } catch (const CLI::OptionNotFound&) {
        std::cerr << "npumem: no subcommand '" << argv[2]
                  << "' (subcommands: " << subcommand_names(app) << ")\n";
        return npumem::cli::kExitBadInput;
      }
    }
    std::cout << (topic != nullptr ? topic->help() : app.help());
    return npumem::cli::kExitOk;
  }
  try {
    app.get_subcommand(word);
    return -1;
  } catch (const CLI::OptionNotFound&) {
    std::cerr << "npumem: unknown subcommand '" << word
              << "' (subcommands: " << subcommand_names(app) << "; `npumem help` describes them)\n";
    return npumem::cli::kExitBadInput;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"npumem: memory manager for AI accelerators", "npumem"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("npumem ") + npumem_version());
  int exit_code = npumem::cli::kExitOk;
  npumem::cli::add_replay_command(app, exit_code);
  npumem::cli::add_plan_command(app, exit_code);
  npumem::cli::add_viz_command(app, exit_code);
  npumem::cli::add_smi_command(app, exit_code);
  npumem::cli::add_mon_command(app, exit_code);
  npumem::cli::add_compare_command(app, exit_code);
  npumem::cli::add_advise_command(app, exit_code);
  if (const int handled = handle_help_or_unknown(app, argc, argv); handled >= 0) return handled;
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
