// `npumem compare TRACE`: the trace under every strategy, in one table.
#include <algorithm>
#include <iostream>
#include <set>
#include <string>

#include "commands.h"
#include "json_text.h"
#include "replay.h"
#include "strategy_comparison.h"
#include "trace.h"

namespace npumem::cli {

void add_compare_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string trace_path;
    std::string device_spec = "sim";
    std::string conf;
    std::vector<std::string> quotas;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command =
      app.add_subcommand("compare", "Replay a trace under every strategy and compare them");
  // The columns, which read as the same figure twice (ns/event near p99 under planned,
  // min HBM below peak resv) without their definitions.
  command->footer(
      "Columns: peak req / peak resv: peaks of requested and reserved bytes; overhead: their "
      "ratio; min HBM: the smallest HBM (no DDR) that completes the trace, found by replays "
      "(below peak resv where a tighter device makes the strategy release or pack more); "
      "HBM/peak: min HBM over peak req; ns/event: the whole replay's time per allocation or "
      "free (planned: its planning at iteration marks included); p50 / p99 / max ns: one "
      "allocation's latency, timed each on its own; dev alloc: device allocations (segments, "
      "granules mapped).");
  command->add_option("trace", options->trace_path, "trace file (see docs/TRACE_FORMAT.md)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--device", options->device_spec, "sim device spec (its hbm is varied)");
  command->add_option("--conf", options->conf,
                      "settings over NPUMEM_ALLOC_CONF for every row, key:value,... (each row "
                      "sets its own strategy)");
  add_quota_option(*command, options->quotas);
  command->add_flag("--json", options->json, "print one JSON object");
  command->callback([options, &exit_code] {
    const Trace trace = read_trace(options->trace_path);
    ReplayOptions replay;
    replay.device_spec = options->device_spec;
    // Each row sets its own strategy: the environment's is not read.
    replay.config = config_over_environment("strategy:caching," + options->conf, "--conf");
    replay.pool_quotas = parse_quotas(options->quotas, trace);
    const auto rows = compare_strategies(trace, replay);
    std::set<std::string> said;  // each strategy's allocator says the same of a quota
    for (const StrategyFigures& row : rows) {
      for (const std::string& warning : row.warnings) {
        if (said.insert(warning).second) std::cerr << "npumem: warning: " << warning << "\n";
      }
    }
    if (options->json) {
      std::cout << json_text(comparison_json(options->trace_path, rows)) << "\n";
    } else {
      std::cout << comparison_text(options->trace_path, rows);
    }
    // As replay's: out of memory when no strategy completes the trace.
    const bool any_completed = std::any_of(
        rows.begin(), rows.end(), [](const StrategyFigures& row) { return row.failure.empty(); });
    exit_code = any_completed ? kExitOk : kExitOutOfMemory;
  });
}

}  // namespace npumem::cli
