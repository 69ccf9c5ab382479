// Subcommands of the npumem command. Each adds itself to the app; its callback
// stores the process exit code: 0 done, 2 bad input, 3 out of memory, 4 leak found.
#pragma once

#include <CLI/CLI.hpp>

namespace npumem::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;
inline constexpr int kExitLeak = 4;  // replay --leak-check found growth above the threshold

void add_replay_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_viz_command(CLI::App& app, int& exit_code);
void add_smi_command(CLI::App& app, int& exit_code);
void add_mon_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);

}  // namespace npumem::cli
