#include "plan/memory/mirror_compaction.h"

#include <algorithm>
#include <numeric>

#include "plan/memory/order_placement.h"

namespace npumem::plan {
namespace {

// The tensors by how far their tops sit below the arena, least first (ties: by index),
// except that those whose tops reach above `kicked_above` go last, in the same order.
std::vector<std::uint32_t> order_from_the_top(const PlanInstance& instance,
                                              const std::vector<std::uint64_t>& offsets,
                                              std::uint64_t kicked_above = kNoFit) {
  std::vector<std::uint64_t> top(instance.tensors.size());
  for (std::size_t i = 0; i < top.size(); ++i) top[i] = offsets[i] + instance.tensors[i].size;
  std::vector<std::uint32_t> order(instance.tensors.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return top[a] > top[b]; });
  std::stable_partition(order.begin(), order.end(),
                        [&](std::uint32_t tensor) { return top[tensor] <= kicked_above; });
  return order;
}

}  // namespace

std::uint64_t compact_by_mirroring(const PlanInstance& instance,
                                   std::vector<std::uint64_t>& offsets, std::uint64_t arena,
                                   std::uint64_t max_passes, SearchClock& clock,
                                   SearchClock::time_point deadline,
                                   SearchClock::duration* longest_pass) {
  std::vector<std::uint64_t> mirrored;
  std::uint64_t passes_without_gain = 0;
  SearchClock::duration longest{0};
  for (std::uint64_t pass = 0; pass < max_passes && passes_without_gain < 2; ++pass) {
    const SearchClock::time_point start = clock.now();
    if (deadline - start <= longest) break;  // it would end past the deadline
    const std::uint64_t compacted = place_in_order(instance, order_from_the_top(instance, offsets),
                                                   GapRule::first_fit, mirrored, &clock);
    longest = std::max(longest, clock.now() - start);
    if (compacted > arena) break;  // kNoFit: keep the plan there is
    passes_without_gain = compacted < arena ? 0 : passes_without_gain + 1;
    arena = compacted;
    offsets.swap(mirrored);
  }
  if (longest_pass != nullptr) *longest_pass = longest;
  return arena;
}

std::uint64_t kick_and_compact(const PlanInstance& instance, std::vector<std::uint64_t>& offsets,
                               std::uint64_t kicked_above, std::uint64_t max_passes,
                               SearchClock& clock, SearchClock::time_point deadline) {
  std::vector<std::uint64_t> kicked;
  const std::uint64_t arena =
      place_in_order(instance, order_from_the_top(instance, offsets, kicked_above),
                     GapRule::first_fit, kicked, &clock);
  if (arena == kNoFit) return kNoFit;
  offsets.swap(kicked);
  return compact_by_mirroring(instance, offsets, arena, max_passes, clock, deadline);
}

}  // namespace npumem::plan
