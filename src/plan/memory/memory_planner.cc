// plan_memory: normalises the tensors, measures the bounds, runs the placement search and
// reports the plan in input order.
#include <algorithm>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "plan/memory/placement_search.h"
#include "plan/memory/plan_instance.h"

namespace npumem::plan {
namespace {

SearchClock::time_point deadline_after(const SearchClock& clock,
                                       std::chrono::nanoseconds time_limit) {
  const SearchClock::time_point now = clock.now();
  if (time_limit >= SearchClock::time_point::max() - now) return SearchClock::time_point::max();
  return now + std::chrono::duration_cast<SearchClock::duration>(time_limit);
}

}  // namespace

std::chrono::nanoseconds time_limit_from_seconds(double seconds) {
  if (!(seconds >= 0)) {
    throw ConfigError("a time limit is a number of seconds >= 0, not " + std::to_string(seconds));
  }
  if (seconds >= 1e9) return std::chrono::nanoseconds::max();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds));
}

MemoryPlan plan_memory(std::span<const TensorLifetime> tensors, const MemoryPlanOptions& options) {
  SearchClock clock(options.counts_work);
  const SearchClock::time_point deadline = deadline_after(clock, options.time_limit);
  const PlanInstance instance = make_plan_instance(tensors, options.alignment);
  const std::vector<std::uint64_t> live = live_bytes_per_op(instance);
  MemoryPlan plan;
  plan.lower_bound_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  plan.naive_bytes = total_bytes(instance);
  Placement placement = search_placement(
      instance, live, {&clock, deadline, options.max_search_iterations, options.seed});
  if (placement.arena == kNoFit) {
    throw Error("no plan found with every tensor below 2^64-1 bytes (lower bound " +
                std::to_string(plan.lower_bound_bytes) + " bytes)");
  }
  plan.offsets = offsets_in_input_order(instance, placement.offsets, tensors.size());
  plan.arena_bytes = placement.arena;
  plan.algorithm = std::move(placement.algorithm);
  plan.proven_optimal = placement.proven_optimal;
  plan.search_iterations = placement.search_iterations;
  return plan;
}

}  // namespace npumem::plan
