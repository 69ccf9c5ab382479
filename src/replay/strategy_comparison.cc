#include "strategy_comparison.h"

#include <cstdio>
#include <iomanip>
#include <sstream>

#include "min_capacity.h"
#include "npumem/errors.h"
#include "npumem/units.h"
#include "static_advisor.h"

namespace npumem::cli {

namespace {

StrategyFigures measure(const Trace& trace, const ReplayOptions& options) {
  StrategyFigures row;
  row.strategy = options.config.strategy;
  if (options.config.strategy == Strategy::static_arena) {
    row.static_size = options.config.static_size;
    row.pool_quotas = options.pool_quotas;
  }
  ReplayOptions timed = options;
  timed.record_latencies = false;
  const ReplayResult result = replay_trace(trace, timed);
  row.warnings = result.warnings;
  if (!result.completed()) {
    row.failure = *result.out_of_memory;
    return row;
  }
  row.peak_requested_bytes = result.peak_requested_bytes;
  row.peak_reserved_bytes = result.peak_reserved_bytes();
  row.overhead_ratio = result.overhead_ratio();
  row.ns_per_event = result.ns_per_event;
  row.device_allocs = result.stats.num_device_alloc;
  ReplayOptions latencies = options;
  latencies.record_latencies = true;
  const ReplayResult timed_each = replay_trace(trace, latencies);
  row.latency = summarize_latencies(timed_each.allocation_latencies_ns);
  row.steady_latency = summarize_latencies(timed_each.steady_latencies_ns());
  row.why_no_plan_served = timed_each.why_no_plan_served();
  row.min_hbm_capacity_bytes = min_hbm_capacity(trace, options);
  if (row.peak_requested_bytes != 0) {
    row.min_hbm_over_peak = static_cast<double>(row.min_hbm_capacity_bytes) /
                            static_cast<double>(row.peak_requested_bytes);
  }
  return row;
}

StrategyFigures measure_strategy(const Trace& trace, const ReplayOptions& options,
                                 Strategy strategy) {
  ReplayOptions run = options;
  run.config.strategy = strategy;
  const std::map<std::string, std::uint64_t> in_trace = trace_quotas(trace);
  if (strategy == Strategy::static_arena) {
    run.config.static_fallback = false;
    const StaticAdvice advice = advise_static_size(trace, options, 0.0);
    // A static_size in the settings is the arena compared (it was replaced without a word).
    if (run.config.static_size == 0) run.config.static_size = advice.min_arena_bytes;
    // Quotas given (--quota, else the trace's) size their pools' arenas, as a live
    // static allocator's; the advice the others'.
    run.pool_quotas = pool_quotas(advice.pools, false);
    for (const auto& [pool, quota] : in_trace) run.pool_quotas.erase(pool);  // each `p` line's
    for (const auto& [pool, quota] : options.pool_quotas) run.pool_quotas[pool] = quota;
  }
  StrategyFigures row = measure(trace, run);
  row.static_size_given = strategy == Strategy::static_arena && options.config.static_size != 0;
  if (strategy == Strategy::static_arena) {
    for (const auto& [pool, quota] : in_trace) row.quotas_in_trace.insert(pool);
    for (const auto& [pool, quota] : options.pool_quotas) row.quotas_given.insert(pool);
  }
  return row;
}

// "n/a" and null when no byte was requested.
std::string ratio_text(std::optional<double> ratio) {
  if (!ratio) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", *ratio);
  return text;
}

nlohmann::ordered_json ratio_json(std::optional<double> ratio) {
  return ratio ? nlohmann::ordered_json(*ratio) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::vector<StrategyFigures> compare_strategies(const Trace& trace, const ReplayOptions& options) {
  std::vector<StrategyFigures> rows;
  for (Strategy strategy :
       {Strategy::caching, Strategy::expandable, Strategy::static_arena, Strategy::planned}) {
    try {
      rows.push_back(measure_strategy(trace, options, strategy));
    } catch (const ConfigError&) {
      throw;  // the settings are wrong for every strategy
    } catch (const ParseError&) {
      throw;  // and the trace (a quota the device cannot honour)
    } catch (const Error& error) {
      StrategyFigures failed;
      failed.strategy = strategy;
      failed.failure = error.what();
      rows.push_back(std::move(failed));
    }
  }
  return rows;
}

nlohmann::ordered_json comparison_json(const std::string& trace_path,
                                       const std::vector<StrategyFigures>& rows) {
  nlohmann::ordered_json out;
  out["trace"] = trace_path;
  out["strategies"] = nlohmann::ordered_json::array();
  for (const StrategyFigures& row : rows) {
    nlohmann::ordered_json item;
    item["strategy"] = std::string(strategy_name(row.strategy));
    item["completed"] = row.failure.empty();
    if (!row.failure.empty()) {
      item["failure"] = row.failure;
      out["strategies"].push_back(item);
      continue;
    }
    item["peak_requested_bytes"] = row.peak_requested_bytes;
    item["peak_reserved_bytes"] = row.peak_reserved_bytes;
    item["overhead_ratio"] = ratio_json(row.overhead_ratio);
    item["min_hbm_capacity_bytes"] = row.min_hbm_capacity_bytes;
    item["min_hbm_over_peak"] = ratio_json(row.min_hbm_over_peak);
    item["ns_per_event"] = row.ns_per_event;
    item["latency_p50_ns"] = row.latency.p50_ns;
    item["latency_p99_ns"] = row.latency.p99_ns;
    item["latency_max_ns"] = row.latency.max_ns;
    if (row.strategy == Strategy::planned) {
      // None, not 0, when no plan served (a 0 read as the fastest).
      const bool served = row.why_no_plan_served.empty();
      const auto steady = [&](std::uint64_t ns) {
        return served ? nlohmann::ordered_json(ns) : nlohmann::ordered_json(nullptr);
      };
      item["plan_served"] = served;
      item["steady_latency_p50_ns"] = steady(row.steady_latency.p50_ns);
      item["steady_latency_p99_ns"] = steady(row.steady_latency.p99_ns);
      item["steady_latency_max_ns"] = steady(row.steady_latency.max_ns);
    }
    item["device_allocs"] = row.device_allocs;
    if (row.strategy == Strategy::static_arena) {
      item["static_size"] = row.static_size;
      item["static_size_given"] = row.static_size_given;
      for (const auto& [pool, quota] : row.pool_quotas) item["pool_quotas"][pool] = quota;
    }
    out["strategies"].push_back(item);
  }
  return out;
}

std::string comparison_text(const std::string& trace_path,
                            const std::vector<StrategyFigures>& rows) {
  std::ostringstream out;
  out << "npumem compare " << trace_path << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-11s %12s %12s %8s %12s %9s %9s %8s %8s %9s %8s\n", "strategy",
                "peak req", "peak resv", "overhead", "min HBM", "HBM/peak", "ns/event", "p50 ns",
                "p99 ns", "max ns", "dev alloc");
  out << line;
  for (const StrategyFigures& row : rows) {
    if (!row.failure.empty()) {
      // The failure's first line: an out-of-memory report goes on for a page.
      out << std::left << std::setw(11) << strategy_name(row.strategy)
          << " did not complete: " << row.failure.substr(0, row.failure.find('\n')) << "\n";
      continue;
    }
    std::snprintf(
        line, sizeof line, "%-11s %12s %12s %8s %12s %9s %9.1f %8llu %8llu %9llu %8lld\n",
        std::string(strategy_name(row.strategy)).c_str(),
        format_bytes(row.peak_requested_bytes).c_str(),
        format_bytes(row.peak_reserved_bytes).c_str(), ratio_text(row.overhead_ratio).c_str(),
        format_bytes(row.min_hbm_capacity_bytes).c_str(), ratio_text(row.min_hbm_over_peak).c_str(),
        row.ns_per_event, static_cast<unsigned long long>(row.latency.p50_ns),
        static_cast<unsigned long long>(row.latency.p99_ns),
        static_cast<unsigned long long>(row.latency.max_ns),
        static_cast<long long>(row.device_allocs));
    out << line;
  }
  for (const StrategyFigures& row : rows) {
    if (!row.failure.empty()) continue;
    if (row.strategy == Strategy::planned && !row.why_no_plan_served.empty()) {
      out << "planned: no plan served, it ran as its fallback (" << row.why_no_plan_served << ")\n";
    } else if (row.strategy == Strategy::planned) {
      out << "planned since a plan served: p50 " << row.steady_latency.p50_ns << " ns, p99 "
          << row.steady_latency.p99_ns << " ns, max " << row.steady_latency.max_ns << " ns\n";
    }
    if (row.strategy == Strategy::static_arena) {
      // Each arena says where its size came from: a quota given read as "the smallest
      // that completes" with the others.
      out << "static arena: " << format_bytes(row.static_size)
          << (row.static_size_given ? " (static_size as set)" : " (the smallest that completes)");
      for (const auto& [pool, quota] : row.pool_quotas) {
        out << ", pool '" << pool << "' " << format_bytes(quota)
            << (row.quotas_given.contains(pool)      ? " (its --quota)"
                : row.quotas_in_trace.contains(pool) ? " (its quota in the trace)"
                                                     : " (the smallest)");
      }
      out << (row.static_size_given && row.pool_quotas.size() == row.quotas_given.size()
                  ? "\n"
                  : "; `npumem replay --advise` adds a margin\n");
    }
  }
  return out.str();
}

}  // namespace npumem::cli
