// `npumem replay TRACE`: replays an allocation trace through the allocator on a
// device and reports peaks, overhead, tier use, spills, reclaims, OOMs and speed.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "json_text.h"
#include "min_capacity.h"
#include "npumem/config.h"
#include "npumem/errors.h"
#include "npumem/units.h"
#include "progress.h"
#include "replay.h"
#include "replay_observers.h"
#include "replay_report.h"
#include "static_advisor.h"
#include "trace.h"

namespace npumem::cli {
namespace {

// After an out of memory: when the trace's live tensors alone pass what the device holds
// (HBM, and DDR when spilling), a line that says so. The explanation above judges the
// moment it stopped, and its advice (a setting, another strategy) cannot fit the rest
// (a training step whose weights, gradients and optimizer state alone passed HBM).
std::string beyond_the_device(const Trace& trace, const ReplayResult& result,
                              const Config& config) {
  const TierFigures& hbm = result.tiers[static_cast<std::size_t>(Tier::hbm)];
  const TierFigures& ddr = result.tiers[static_cast<std::size_t>(Tier::ddr)];
  const bool spills = config.spill_to_ddr && ddr.present;
  const std::uint64_t holds =
      (hbm.present ? hbm.capacity_bytes : 0) + (spills ? ddr.capacity_bytes : 0);
  const std::uint64_t peak = peak_live_bytes(trace);
  if (peak <= holds) return "";
  return "npumem: the trace's live tensors peak at " + format_bytes(peak) + ", more than the " +
         format_bytes(holds) + " the device holds (" +
         (spills        ? "hbm and ddr"
          : ddr.present ? "hbm; no spill to ddr"
                        : "hbm; ddr absent") +
         "): no strategy or setting fits it. Give it more memory (--device), or hold fewer "
         "tensors at once; --min-capacity prints the least HBM each strategy needs.\n";
}

constexpr Strategy kStrategies[] = {Strategy::caching, Strategy::expandable, Strategy::static_arena,
                                    Strategy::planned};

struct ReplayCommandOptions {
  std::string trace_path;
  std::string device_spec = "sim";
  std::optional<std::string> strategy;
  std::string conf;
  bool json = false;
  bool min_capacity = false;
  bool latency = false;
  std::optional<double> advise_margin_percent;
  std::vector<std::string> quotas;  // --quota NAME=SIZE
  ReplayObserverOptions observe;
};

// "10%" or "10" (as the README writes it) to "10"; anything but a non-negative
// number is an error naming the option.
// A static arena ten times what the trace needs is advice no one wants; past that the
// sizes would also overflow.
constexpr double kMostMarginPercent = 1000.0;

std::string percent_text(const std::string& given) {
  std::string text = given;
  if (text.ends_with('%')) text.pop_back();
  double value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || !(value >= 0) ||
      !(value <= kMostMarginPercent)) {
    throw CLI::ValidationError("expects a margin in percent from 0 to " +
                               std::to_string(static_cast<int>(kMostMarginPercent)) +
                               " such as 10 or 10%, not '" + given + "'");
  }
  return text;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Strategy strategy : kStrategies) names.emplace_back(strategy_name(strategy));
  return names;
}

// NPUMEM_ALLOC_CONF, then --conf over it, then --strategy over both (a key's last
// setting wins; CLI11 has checked the strategy's name).
Config build_config(const ReplayCommandOptions& options) {
  if (!options.strategy) return config_over_environment(options.conf, "--conf");
  try {
    return config_over_environment(options.conf + ",strategy:" + *options.strategy, "--conf");
  } catch (const ConfigError&) {
    // The settings alone parse to expandable: what disagrees is --strategy, not --conf.
    if (config_over_environment(options.conf, "--conf").strategy != Strategy::expandable) throw;
    throw ConfigError("--strategy " + *options.strategy +
                      " and expandable_segments:true (in --conf or NPUMEM_ALLOC_CONF) disagree "
                      "(expandable_segments:true is strategy:expandable); give one of them");
  }
}

// Where the static strategy of build_config(options) was set, as a user would look for it.
std::string static_strategy_source(const ReplayCommandOptions& options) {
  if (options.strategy) return "--strategy static";
  if (parse_config(options.conf).strategy == Strategy::static_arena) {
    return "--conf sets strategy:static, which";
  }
  return "NPUMEM_ALLOC_CONF sets strategy:static, which";
}

std::uint64_t find_min_capacity(const Trace& trace, const ReplayOptions& options) {
  ProgressBar bar("min-capacity");
  return min_hbm_capacity(trace, options, [&bar](std::uint64_t hbm_bytes) {
    bar.set_label("min-capacity: trying hbm=" + format_bytes(hbm_bytes));
    bar.update(0, 1);
  });
}

int run_replay(const ReplayCommandOptions& options) {
  const Trace trace = read_trace(options.trace_path);
  // Rejects a device --min-capacity cannot resize before spending time on the replay.
  if (options.min_capacity) hbm_only_spec(options.device_spec, kCapacityStep);
  ReplayObservers observers(options.observe, trace);
  ReplayOptions replay_options;
  replay_options.hooks = observers.hooks();
  replay_options.device_spec = options.device_spec;
  replay_options.config = build_config(options);
  replay_options.record_latencies = options.latency;
  const bool static_strategy = replay_options.config.strategy == Strategy::static_arena;
  const bool arena_unsized = static_strategy && replay_options.config.static_size == 0;
  if (arena_unsized && !allocates_in(trace, kDefaultPoolName)) {
    // Every allocation is in a named pool, sized by its quota: the default pool's arena
    // serves nothing, and one granule (the least an arena is) stands in for static_size.
    replay_options.config.static_size = least_arena_bytes(replay_options);
  } else if (arena_unsized && !options.advise_margin_percent) {
    throw ConfigError(static_strategy_source(options) +
                      " needs static_size:<bytes> (the arena size) in --conf or "
                      "NPUMEM_ALLOC_CONF; --advise finds one and replays with it");
  }
  ReplayReport report;
  report.trace_path = options.trace_path;
  if (static_strategy && options.advise_margin_percent && arena_unsized) {
    // --advise is how static arenas get their sizes: the replay uses those it advises,
    // the default pool's and each named pool's (it ran the pools in their smallest),
    // the quotas the trace's `p` lines give set aside; --quota still overrides.
    report.static_advice =
        advise_static_size(trace, replay_options, *options.advise_margin_percent / 100.0);
    replay_options.config.static_size = report.static_advice->recommended_bytes;
    replay_options.pool_quotas = pool_quotas(report.static_advice->pools, true);
  } else if (static_strategy) {
    // A trace's pools need quotas to size their arenas: the quota its `p` line gives (as
    // a live static allocator's), else the smallest arena its own allocations complete
    // in (the report's pool table shows them).
    replay_options.pool_quotas = pool_quotas(advise_pool_arenas(trace, replay_options, 0.0), false);
    // A pool whose `p` line gives a quota takes that line's, each time it is made: one
    // quota per name gave a pool made anew with another the first one's.
    for (const auto& [pool, quota] : trace_quotas(trace)) replay_options.pool_quotas.erase(pool);
  }
  for (const auto& [pool, quota] : parse_quotas(options.quotas, trace)) {
    replay_options.pool_quotas[pool] = quota;
  }
  {
    ProgressBar bar("replay");
    replay_options.progress = [&bar](std::size_t done, std::size_t total) {
      bar.update(done, total);
    };
    report.result = replay_trace(trace, replay_options);
    replay_options.progress = nullptr;
    replay_options.hooks = {};
  }
  for (const std::string& warning : report.result.warnings) {
    std::cerr << "npumem: warning: " << warning << "\n";
  }
  if (options.min_capacity)
    report.min_hbm_capacity_bytes = find_min_capacity(trace, replay_options);
  if (options.advise_margin_percent && !report.static_advice) {
    // After a replay under another strategy, an arena that cannot be found is part of
    // the report, not a reason to withhold it.
    try {
      report.static_advice =
          advise_static_size(trace, replay_options, *options.advise_margin_percent / 100.0);
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      report.static_advice_failure = e.what();
    }
  }
  if (options.json) {
    std::cout << json_text(replay_report_json(report)) << "\n";
  } else {
    std::cout << replay_report_text(report);
  }
  if (observers.size_patterns()) {
    (options.json ? std::cerr : std::cout) << to_string(*observers.size_patterns());
  }
  const auto& leaks = observers.leak_report();
  if (leaks && report.result.completed()) {
    (options.json ? std::cerr : std::cout) << to_string(*leaks);
  } else if (leaks) {
    // Its iterations are those before the stop, its growth from wherever that fell.
    (options.json ? std::cerr : std::cout)
        << "leak check: not judged: the replay stopped by out of memory\n";
  }
  int exit_code = leaks && leaks->leaking ? kExitLeak : kExitOk;
  if (report.result.out_of_memory) {
    std::cerr << "npumem: " << *report.result.out_of_memory << "\n"
              << beyond_the_device(trace, report.result, replay_options.config);
    exit_code = kExitOutOfMemory;
  } else if (!report.static_advice_failure.empty()) {
    std::cerr << "npumem: --advise: " << report.static_advice_failure << "\n";
    exit_code = kExitOutOfMemory;
  }
  std::cout.flush();
  observers.hold();
  return exit_code;
}

}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "replay", "Replay an allocation trace (a <id> <bytes> / f <id>) through the allocator");
  command->add_option("trace", options->trace_path, "trace file (see docs/TRACE_FORMAT.md)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--device", options->device_spec, "device spec, e.g. sim:hbm=16GiB,ddr=0")
      ->capture_default_str();
  command->add_option("--strategy", options->strategy, "allocation strategy")
      ->check(CLI::IsMember(strategy_names()));
  command->add_option(
      "--conf", options->conf,
      "settings 'key:value,...' over NPUMEM_ALLOC_CONF (see include/npumem/config.h)");
  command->add_flag("--json", options->json, "print one JSON object");
  command->add_flag("--min-capacity", options->min_capacity,
                    "also find the smallest HBM (no DDR) that completes the trace, to 1 MiB");
  command->add_flag("--latency", options->latency, "time each allocation (p50, p99, max)");
  command
      ->add_option("--advise", options->advise_margin_percent,
                   "recommend a static arena size: the smallest that completes the trace "
                   "under the static strategy, plus this margin in percent")
      ->expected(0, 1)
      ->default_str("10")
      ->transform(percent_text, "MARGIN[%]");
  add_quota_option(*command, options->quotas);
  add_replay_observer_options(*command, options->observe);
  command->callback([options, &exit_code] { exit_code = run_replay(*options); });
}

}  // namespace npumem::cli
