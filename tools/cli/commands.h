// Subcommands of the npumem command. Each adds itself to the app; its callback
// stores the process exit code: 0 done, 1 internal error, 2 bad input, 3 out of memory,
// 4 leak found.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace.h"

namespace npumem::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;
inline constexpr int kExitLeak = 4;  // replay --leak-check found growth above the threshold

// Option checks for sizes and bandwidths (npumem/units.h syntax): CLI11 puts the
// option's name in front of the problem, e.g. "--alignment: bad size 'x' ...".
CLI::Validator size_check();
CLI::Validator power_of_two_size_check();
CLI::Validator bandwidth_check();
// Numbers >= 0 and > 0: "--id: -1 is negative".
CLI::Validator nonnegative_check();
CLI::Validator positive_check();
// Seconds from `least` to `most`; one message for a number out of range and for text that
// is none ("abc" read "not in range 0.050000 to 3600.000000", "0" read "not positive").
CLI::Validator seconds_check(double least, double most);
// Digits only, at most 2^64-1: for unsigned options (CLI11 wraps -1 round).
CLI::Validator whole_number_check();
// An output file's path: not empty (it wrote nothing and said nothing).
CLI::Validator output_path_check();
// Throws ConfigError when `output` names the same file as one of `inputs` or another
// output (each: option or role, path): written last, it would destroy what they hold.
void check_outputs_apart(const std::vector<std::pair<std::string, std::string>>& inputs,
                         const std::vector<std::pair<std::string, std::string>>& outputs);
// Throws Error when `path` cannot be written as `what`, found without changing it: a
// file there keeps what it holds until the run writes it (a run that stopped on bad
// input emptied the last run's snapshot).
void check_writable(const std::string& path, const std::string& what);
// --quota NAME=SIZE (repeatable) for pools the trace switches to (`p` lines), as replay
// and compare take it (over the quotas the trace's `p` lines give); parse_quotas checks
// them against the trace's pools.
void add_quota_option(CLI::App& command, std::vector<std::string>& quotas);
std::map<std::string, std::uint64_t> parse_quotas(const std::vector<std::string>& given,
                                                  const Trace& trace);

void add_replay_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_viz_command(CLI::App& app, int& exit_code);
void add_smi_command(CLI::App& app, int& exit_code);
void add_mon_command(CLI::App& app, int& exit_code);
void add_compare_command(CLI::App& app, int& exit_code);
void add_advise_command(CLI::App& app, int& exit_code);

}  // namespace npumem::cli
