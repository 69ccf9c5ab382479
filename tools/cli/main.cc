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

// `npumem help [SUBCOMMAND]` prints the help; a word that is no subcommand, first or
// after `plan` or `advise`, is named as such, and so is a missing one (CLI11 alone would
// only say a subcommand is required). Returns the exit code when the arguments were
// handled here, -1 otherwise.
int handle_help_or_unknown(const CLI::App& app, int argc, char** argv) {
  const std::string word = argc >= 2 ? argv[1] : "";
  if (word == "help") {
    // `help plan shard`: each word a subcommand of the one before.
    const CLI::App* topic = &app;
    std::string path;
    std::string parents;  // what `--help` puts before the topic's name in its usage line
    for (int i = 2; i < argc; ++i) {
      const std::string name = argv[i];
      path += (path.empty() ? "" : " ") + name;
      parents += (parents.empty() ? "" : " ") + topic->get_name();
      try {
        topic = topic->get_subcommand(name);
      } catch (const CLI::OptionNotFound&) {
        const std::string names = subcommand_names(*topic);
        std::cerr << "npumem: no subcommand '" << path << "' ("
                  << (names.empty() ? topic->get_name() + " has none" : "subcommands: " + names)
                  << ")\n";
        return npumem::cli::kExitBadInput;
      }
    }
    std::cout << topic->help(parents);
    return npumem::cli::kExitOk;
  }
  // The word after each command that has subcommands of its own (plan, advise) too.
  const CLI::App* parent = &app;
  std::string path;  // the subcommands so far, space-separated
  int i = 1;
  for (; i < argc && argv[i][0] != '-'; ++i) {
    const std::string name = argv[i];
    try {
      parent = parent->get_subcommand(name);
    } catch (const CLI::OptionNotFound&) {
      std::cerr << "npumem: unknown subcommand '" << (path.empty() ? name : path + " " + name)
                << "' (subcommands" << (path.empty() ? "" : " of " + path) << ": "
                << subcommand_names(*parent) << "; `npumem help` describes them)\n";
      return npumem::cli::kExitBadInput;
    }
    path += (path.empty() ? "" : " ") + name;
    if (parent->get_subcommands([](const CLI::App*) { return true; }).empty()) return -1;
  }
  // Nothing but options after a command that has subcommands: name them (help asked
  // for is CLI11's to print).
  const auto asks_help = [&] {
    for (int k = i; k < argc; ++k) {
      const std::string arg = argv[k];
      if (arg == "-h" || arg == "--help" || arg == "--version") return true;
    }
    return false;
  };
  if (!asks_help()) {
    std::cerr << "npumem: "
              << (path.empty() ? "a subcommand is needed" : path + " needs a subcommand") << " ("
              << subcommand_names(*parent) << "; `npumem help" << (path.empty() ? "" : " " + path)
              << "` describes them)\n";
    return npumem::cli::kExitBadInput;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"npumem: memory manager for AI accelerators", "npumem"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("npumem ") + npumem_version());
  app.footer("`npumem help CMD [SUBCMD]` (or `npumem CMD --help`): one command's options.");
  // CLI11's own refusals (a missing file, a value not among the choices) in the form
  // of every other error: "npumem: ...".
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "npumem: " + std::string(e.what()) + "\nRun with --help for more information.\n";
  });
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
