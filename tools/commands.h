// Subcommands of the npumem command. Each adds itself to the app; its callback
// stores the process exit code: 0 done, 2 bad input, 3 out of memory.
#pragma once

#include <CLI/CLI.hpp>

namespace npumem::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;

void add_replay_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);

}  // namespace npumem::cli
