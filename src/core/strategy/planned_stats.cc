// PlannedStats as flat keys, for npumem_stat() and Python's memory_stats(), and the
// ratios derived from them.
#include "npumem/allocator.h"

namespace npumem {

double PlannedStats::hit_share() const {
  const std::uint64_t requests = hits + fallbacks + learning + declined + lasting + deferred;
  return requests == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(requests);
}

std::optional<double> PlannedStats::steady_overhead_ratio() const {
  if (steady_peak_requested_bytes == 0) return std::nullopt;
  return static_cast<double>(steady_peak_reserved_bytes) /
         static_cast<double>(steady_peak_requested_bytes);
}

std::optional<double> PlannedStats::steady_floor_ratio() const {
  if (steady_peak_requested_bytes == 0 || granule_bytes == 0) return std::nullopt;
  const std::uint64_t granules = (steady_peak_requested_bytes + granule_bytes - 1) / granule_bytes;
  return static_cast<double>(granules * granule_bytes) /
         static_cast<double>(steady_peak_requested_bytes);
}

std::map<std::string, std::int64_t> PlannedStats::as_map() const {
  const auto value = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  std::map<std::string, std::int64_t> out = {
      {"planned.plans_learned", value(plans_learned)},
      {"planned.plans_evicted", value(plans_evicted)},
      {"planned.plans_relearned_after_eviction", value(plans_relearned_after_eviction)},
      {"planned.max_plans", value(max_plans)},
      {"planned.plans_kept", value(plans.size())},
      {"planned.arena_bytes", value(arena_bytes)},
      {"planned.hits", value(hits)},
      {"planned.hit_bytes", value(hit_bytes)},
      {"planned.fallbacks", value(fallbacks)},
      {"planned.fallback_bytes", value(fallback_bytes)},
      {"planned.learning", value(learning)},
      {"planned.learning_bytes", value(learning_bytes)},
      {"planned.declined", value(declined)},
      {"planned.declined_bytes", value(declined_bytes)},
      {"planned.iterations_not_learned", value(iterations_not_learned)},
      {"planned.lasting", value(lasting)},
      {"planned.lasting_bytes", value(lasting_bytes)},
      {"planned.deferred", value(deferred)},
      {"planned.deferred_bytes", value(deferred_bytes)},
      {"planned.iterations", value(iterations)},
      {"planned.first_served_iteration", value(first_served_iteration)},
      {"planned.device_calls_after_arena", value(device_calls_after_arena)},
      {"planned.arena_device_calls", value(arena_device_calls)},
      {"planned.steady_peak_reserved_bytes", value(steady_peak_reserved_bytes)},
      {"planned.steady_peak_requested_bytes", value(steady_peak_requested_bytes)},
      {"planned.granule_bytes", value(granule_bytes)}};
  // Each kept plan under "planned.plans.<i>."; a key of 2^63 or more reads negative.
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const PlanInfo& plan = plans[i];
    const std::string prefix = "planned.plans." + std::to_string(i) + ".";
    out[prefix + "requests"] = value(plan.requests);
    out[prefix + "planned_requests"] = value(plan.planned_requests);
    out[prefix + "hole_requests"] = value(plan.hole_requests);
    out[prefix + "arena_bytes"] = value(plan.arena_bytes);
    out[prefix + "lower_bound_bytes"] = value(plan.lower_bound_bytes);
    out[prefix + "iterations_served"] = value(plan.iterations_served);
    out[prefix + "iterations_left"] = value(plan.iterations_left);
    out[prefix + "fallback_peak_reserved_bytes"] = value(plan.fallback_peak_reserved_bytes);
    out[prefix + "declined"] = plan.declined ? 1 : 0;
    out[prefix + "declined_for_misses"] = plan.declined_for_misses ? 1 : 0;
    out[prefix + "declined_reserved_bytes"] = value(plan.declined_reserved_bytes);
    if (plan.last_miss.seen) {
      out[prefix + "last_miss_request"] = value(plan.last_miss.request);
      out[prefix + "last_miss_bytes"] = value(plan.last_miss.bytes);
      out[prefix + "last_miss_planned_bytes"] = value(plan.last_miss.planned_bytes);
      out[prefix + "last_miss_place_taken"] = value(plan.last_miss.place_taken ? 1 : 0);
    }
    if (plan.key) out[prefix + "key"] = value(*plan.key);
  }
  return out;
}

}  // namespace npumem
