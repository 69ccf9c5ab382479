#include "replay_report.h"

#include <cstdio>
#include <sstream>

#include "npumem/planned_report.h"
#include "npumem/text_cell.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

// null when no byte was requested.
// A ratio, or null where it is undefined (nlohmann 3.11.2 has no std::optional support).
nlohmann::ordered_json ratio_json(std::optional<double> ratio) {
  return ratio ? nlohmann::ordered_json(*ratio) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json tier_json(const TierFigures& tier) {
  return {{"present", tier.present},
          {"capacity_bytes", tier.capacity_bytes},
          {"peak_reserved_bytes", tier.peak_reserved_bytes},
          {"peak_allocated_bytes", tier.peak_allocated_bytes}};
}

nlohmann::ordered_json pools_json(const std::vector<PoolInfo>& pools) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const PoolInfo& pool : pools) {
    json[pool.name] = {{"peak_requested_bytes", pool.stats.requested_bytes.all.peak},
                       {"peak_allocated_bytes", pool.stats.allocated_bytes.all.peak},
                       {"peak_reserved_bytes", pool.stats.reserved_bytes.all.peak},
                       {"quota_bytes", pool.quota_bytes}};
  }
  return json;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// A ratio to 3 decimals, or `undefined` where there is none.
std::string ratio_text(std::optional<double> ratio, const std::string& undefined) {
  return ratio ? fixed(*ratio, 3) : undefined;
}

// Most reclaims are routine (cached memory given back before growing past the reserved
// high-water mark): only those after a refusal (num_alloc_retries) mean pressure, and a
// count without that split read as pressure where there was none.
std::string reclaims_text(const Stats& stats) {
  const auto reclaims = static_cast<std::uint64_t>(stats.num_reclaims);
  if (reclaims == 0) return "0";
  const auto retries = static_cast<std::uint64_t>(stats.num_alloc_retries);
  return format_count(reclaims) + " (" + format_count(retries) +
         " made room a request needed; the rest gave cached memory back before growing past "
         "the reserved peak)";
}

void add_line(std::ostringstream& out, const std::string& name, const std::string& value) {
  // A name of the column's width or more (a plan's 20-digit key) still ends in a space.
  out << "  " << pad_right(name + " ", 22) << value << "\n";
}

void add_tier_table(std::ostringstream& out, const ReplayResult& result) {
  out << "\n  " << pad_right("tier", 8) << pad_right("capacity", 14)
      << pad_right("peak reserved", 16) << "peak allocated\n";
  for (const Tier tier : kAllTiers) {
    const TierFigures& figures = result.tiers[static_cast<std::size_t>(tier)];
    if (!figures.present) continue;
    out << "  " << pad_right(std::string(tier_name(tier)), 8)
        << pad_right(format_bytes(figures.capacity_bytes), 14)
        << pad_right(format_bytes(figures.peak_reserved_bytes), 16)
        << format_bytes(figures.peak_allocated_bytes) << "\n";
  }
}

void add_pool_table(std::ostringstream& out, const std::vector<PoolInfo>& pools) {
  // As wide as the longest name and a space ("model_a (removed)" ran into its figures).
  std::size_t name_width = 16;
  for (const PoolInfo& pool : pools)
    name_width = std::max(name_width, display_width(pool.name) + 1);
  out << "\n  " << pad_right("pool", name_width) << pad_right("peak requested", 16)
      << pad_right("peak allocated", 16) << pad_right("peak reserved", 16) << "quota\n";
  for (const PoolInfo& pool : pools) {
    out << "  " << pad_right(pool.name, name_width)
        << pad_right(format_bytes(static_cast<std::uint64_t>(pool.stats.requested_bytes.all.peak)),
                     16)
        << pad_right(format_bytes(static_cast<std::uint64_t>(pool.stats.allocated_bytes.all.peak)),
                     16)
        << pad_right(format_bytes(static_cast<std::uint64_t>(pool.stats.reserved_bytes.all.peak)),
                     16)
        << (pool.quota_bytes == 0 ? std::string("none") : format_bytes(pool.quota_bytes)) << "\n";
  }
}

nlohmann::ordered_json planned_json(const ReplayResult& result) {
  const PlannedStats& p = result.planned;
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const PlanInfo& plan : p.plans) {
    nlohmann::ordered_json item = {
        {"requests", plan.requests},
        {"planned_requests", plan.planned_requests},
        {"hole_requests", plan.hole_requests},
        {"arena_bytes", plan.arena_bytes},
        {"lower_bound_bytes", plan.lower_bound_bytes},
        {"iterations_served", plan.iterations_served},
        {"iterations_left", plan.iterations_left},
        {"fallback_peak_reserved_bytes", plan.fallback_peak_reserved_bytes},
        {"declined", plan.declined},
        {"declined_for_misses", plan.declined_for_misses},
        {"declined_reserved_bytes", plan.declined_reserved_bytes}};
    if (plan.key) item["key"] = *plan.key;
    if (plan.last_miss.seen) {
      item["last_miss"] = {{"request", plan.last_miss.request},
                           {"bytes", plan.last_miss.bytes},
                           {"planned_bytes", plan.last_miss.planned_bytes},
                           {"place_taken", plan.last_miss.place_taken}};
    }
    plans.push_back(item);
  }
  nlohmann::ordered_json out = {
      {"plans_learned", p.plans_learned},
      {"plans_evicted", p.plans_evicted},
      {"plans_relearned_after_eviction", p.plans_relearned_after_eviction},
      {"max_plans", p.max_plans},
      {"arena_bytes", p.arena_bytes},
      {"hits", p.hits},
      {"hit_bytes", p.hit_bytes},
      {"fallbacks", p.fallbacks},
      {"fallback_bytes", p.fallback_bytes},
      {"learning", p.learning},
      {"learning_bytes", p.learning_bytes},
      {"declined", p.declined},
      {"declined_bytes", p.declined_bytes},
      {"iterations_not_learned", p.iterations_not_learned},
      {"lasting", p.lasting},
      {"lasting_bytes", p.lasting_bytes},
      {"deferred", p.deferred},
      {"deferred_bytes", p.deferred_bytes},
      {"hit_share", p.hit_share()},
      {"steady_peak_reserved_bytes", p.steady_peak_reserved_bytes},
      {"steady_peak_requested_bytes", p.steady_peak_requested_bytes},
      {"steady_overhead_ratio", ratio_json(p.steady_overhead_ratio())},
      {"granule_bytes", p.granule_bytes},
      {"steady_floor_ratio", ratio_json(p.steady_floor_ratio())},
      {"first_served_iteration", p.first_served_iteration == 0
                                     ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json(p.first_served_iteration)},
      {"device_calls_after_arena", p.device_calls_after_arena},
      {"arena_device_calls", p.arena_device_calls},
      {"plans", plans}};
  if (const std::string why = result.why_no_plan_served(); !why.empty()) {
    out["no_plan_served"] = why;
  }
  return out;
}

void add_planned_lines(std::ostringstream& out, const ReplayResult& result) {
  for (const ReportLine& line : planned_report_lines(result.planned, "`i` lines")) {
    add_line(out, line.name, line.value);
    if (line.name != "steady overhead") continue;
    if (const std::vector<std::uint64_t> steady = result.steady_latencies_ns(); !steady.empty()) {
      const LatencySummary latency = summarize_latencies(steady);
      add_line(out, "steady latency",
               "p50 " + format_count(latency.p50_ns) + " ns, p99 " + format_count(latency.p99_ns) +
                   " ns, max " + format_count(latency.max_ns) +
                   " ns (allocations since a plan served)");
    }
  }
}

}  // namespace

nlohmann::ordered_json replay_report_json(const ReplayReport& report) {
  const ReplayResult& result = report.result;
  nlohmann::ordered_json json = {
      {"trace", report.trace_path},
      {"device", result.device_name},
      {"strategy", std::string(strategy_name(result.strategy))},
      {"completed", result.completed()},
      {"events", result.events},
      {"events_replayed", result.events_replayed},
      {"allocations", result.allocations},
      {"iterations", result.iterations},
      {"peak_requested_bytes", result.peak_requested_bytes},
      {"peak_allocated_bytes", result.peak_allocated_bytes()},
      {"peak_reserved_bytes", result.peak_reserved_bytes()},
      {"overhead_ratio", ratio_json(result.overhead_ratio())},
      {"tiers",
       {{"hbm", tier_json(result.tiers[static_cast<std::size_t>(Tier::hbm)])},
        {"ddr", tier_json(result.tiers[static_cast<std::size_t>(Tier::ddr)])}}},
      {"spills", result.stats.num_spills},
      {"reclaims", result.stats.num_reclaims},
      {"alloc_retries", result.stats.num_alloc_retries},
      {"ooms", result.stats.num_ooms},
      {"ns_per_event", result.ns_per_event},
  };
  if (result.strategy == Strategy::planned) {
    json["planned"] = planned_json(result);
    if (const std::vector<std::uint64_t> steady = result.steady_latencies_ns(); !steady.empty()) {
      const LatencySummary latency = summarize_latencies(steady);
      json["planned"]["steady_allocation_latency_ns"] = {
          {"p50", latency.p50_ns}, {"p99", latency.p99_ns}, {"max", latency.max_ns}};
    }
  }
  if (result.pools.size() > 1) json["pools"] = pools_json(result.pools);
  if (!result.allocation_latencies_ns.empty()) {
    const LatencySummary latency = summarize_latencies(result.allocation_latencies_ns);
    json["allocation_latency_ns"] = {
        {"p50", latency.p50_ns}, {"p99", latency.p99_ns}, {"max", latency.max_ns}};
  }
  if (report.min_hbm_capacity_bytes) {
    json["min_hbm_capacity_bytes"] = *report.min_hbm_capacity_bytes;
  }
  if (report.static_advice) {
    const StaticAdvice& advice = *report.static_advice;
    json["static_advice"] = {{"min_arena_bytes", advice.min_arena_bytes},
                             {"margin", advice.margin},
                             {"recommended_static_size", advice.recommended_bytes}};
    json["static_advice"]["all_arenas_min_bytes"] = all_arenas_bytes(advice, false);
    json["static_advice"]["all_arenas_recommended_bytes"] = all_arenas_bytes(advice, true);
    for (const PoolArenaAdvice& pool : advice.pools) {
      json["static_advice"]["pools"].push_back({{"pool", pool.pool},
                                                {"peak_requested_bytes", pool.peak_requested_bytes},
                                                {"min_arena_bytes", pool.min_arena_bytes},
                                                {"recommended_quota", pool.recommended_bytes}});
    }
  }
  if (!report.static_advice_failure.empty()) {
    json["static_advice"] = {{"failure", report.static_advice_failure}};
  }
  if (result.out_of_memory) json["out_of_memory"] = *result.out_of_memory;
  if (!result.started) json["started"] = false;
  return json;
}

std::string replay_report_text(const ReplayReport& report) {
  const ReplayResult& result = report.result;
  std::ostringstream out;
  out << "npumem replay " << report.trace_path << " on " << result.device_name << " ("
      << strategy_name(result.strategy) << ")"
      << (!result.started      ? ": could not start, out of memory before the first event"
          : result.completed() ? ""
                               : ": stopped by out of memory")
      << "\n";
  add_line(out, "events",
           format_count(result.events_replayed) + " of " + format_count(result.events) +
               " (the trace's " + format_count(result.allocations, "allocation") + "; " +
               format_count(result.iterations, "iteration") +
               (result.completed() ? "" : " passed before it stopped") + ")");
  add_line(out, "peak requested",
           format_bytes(result.peak_requested_bytes) +
               (result.completed() ? "" : " (of the events replayed)"));
  add_line(out, "peak allocated", format_bytes(result.peak_allocated_bytes()));
  add_line(out, "peak reserved", format_bytes(result.peak_reserved_bytes()));
  add_line(out, "overhead ratio", ratio_text(result.overhead_ratio(), "n/a (no byte requested)"));
  add_line(out, "spills", format_count(static_cast<std::uint64_t>(result.stats.num_spills)));
  add_line(out, "reclaims", reclaims_text(result.stats));
  add_line(out, "OOMs", format_count(static_cast<std::uint64_t>(result.stats.num_ooms)));
  add_line(out, "ns per event", fixed(result.ns_per_event, 1));
  if (result.strategy == Strategy::planned) add_planned_lines(out, result);
  if (!result.allocation_latencies_ns.empty()) {
    const LatencySummary latency = summarize_latencies(result.allocation_latencies_ns);
    add_line(out, "allocation latency",
             "p50 " + format_count(latency.p50_ns) + " ns, p99 " + format_count(latency.p99_ns) +
                 " ns, max " + format_count(latency.max_ns) + " ns");
  }
  if (report.min_hbm_capacity_bytes) {
    add_line(out, "min HBM capacity",
             format_bytes(*report.min_hbm_capacity_bytes) + " (" +
                 format_count(*report.min_hbm_capacity_bytes) + " bytes, no DDR)");
  }
  if (report.static_advice) {
    const StaticAdvice& advice = *report.static_advice;
    // With pools, the default pool's arena alone read as what the workload needs.
    add_line(out, "static arena needed",
             format_bytes(advice.min_arena_bytes) +
                 (advice.pools.empty() ? "" : " for the default pool"));
    const std::string margin = fixed(advice.margin * 100, 0) + "% margin";
    add_line(out, "static_size advice",
             format_bytes(advice.recommended_bytes) +
                 (advice.margin_cut() ? ", all of the device's HBM: less than a " + margin +
                                            " (a larger device leaves room for one)"
                                      : " with a " + margin + ", in whole granules") +
                 ": NPUMEM_ALLOC_CONF=strategy:static,static_size:" +
                 std::to_string(advice.recommended_bytes));
    for (const PoolArenaAdvice& pool : advice.pools) {
      std::ostringstream advice_line;
      // A static arena's size: other strategies reserve more (whole segments, cached
      // blocks), so it is no quota for them.
      advice_line << "'" << pool.pool << "': " << format_bytes(pool.recommended_bytes)
                  << " under strategy:static (arena needed " << format_bytes(pool.min_arena_bytes)
                  << "; create_pool quota " << pool.recommended_bytes << ")";
      add_line(out, "static pool quota", advice_line.str());
    }
    if (!advice.pools.empty()) {
      add_line(out, "static arenas in all",
               format_bytes(all_arenas_bytes(advice, false)) + " needed, " +
                   format_bytes(all_arenas_bytes(advice, true)) +
                   " advised (the HBM they take together)");
    }
  }
  if (!report.static_advice_failure.empty()) {
    add_line(out, "static_size advice", "none: " + report.static_advice_failure);
  }
  add_tier_table(out, result);
  if (result.pools.size() > 1) add_pool_table(out, result.pools);
  return out.str();
}

}  // namespace npumem::cli
