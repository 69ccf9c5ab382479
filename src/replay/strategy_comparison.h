// The figures a user needs to pick a strategy: one trace replayed under caching,
// expandable and static (its arena sized by the static advisor), each with its peak
// reserved, overhead, smallest completing HBM, speed and allocation latency.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "replay.h"
#include "trace.h"

namespace npumem::cli {

struct StrategyFigures {
  Strategy strategy = Strategy::caching;
  std::uint64_t peak_requested_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  // Ratios to the peak requested bytes: none when no byte was requested.
  std::optional<double> overhead_ratio;
  std::uint64_t min_hbm_capacity_bytes = 0;
  std::optional<double> min_hbm_over_peak;
  double ns_per_event = 0.0;
  LatencySummary latency;
  LatencySummary steady_latency;   // planned: since a plan first served
  std::string why_no_plan_served;  // planned: empty when a plan served
  std::int64_t device_allocs = 0;  // segment or granule creations
  std::uint64_t static_size = 0;   // the arena used (static only)
  bool static_size_given = false;  // by the settings, not the smallest that completes
  std::map<std::string, std::uint64_t> pool_quotas;  // the named pools' arenas (static only)
  std::set<std::string> quotas_given;                // of those, sized by a quota given (--quota)
  std::set<std::string> quotas_in_trace;             // of those, whose `p` line gives a quota
  // Why the trace did not complete under this strategy (an out-of-memory report, or no
  // static arena that fits the device); empty when it did, and only then are the
  // figures above measured.
  std::string failure;
  // What the allocator said that did not stop it (a quota not in whole granules).
  std::vector<std::string> warnings;
};

// Replays `trace` under every strategy over options.config (its strategy ignored). A
// strategy under which the trace does not complete gets a row with its failure; the
// others are still measured.
std::vector<StrategyFigures> compare_strategies(const Trace& trace, const ReplayOptions& options);

nlohmann::ordered_json comparison_json(const std::string& trace_path,
                                       const std::vector<StrategyFigures>& rows);
std::string comparison_text(const std::string& trace_path,
                            const std::vector<StrategyFigures>& rows);

}  // namespace npumem::cli
