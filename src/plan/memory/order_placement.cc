#include "plan/memory/order_placement.h"

#include <algorithm>
#include <numeric>

namespace npumem::plan {
namespace {

std::vector<std::uint32_t> identity_order(const PlanInstance& instance) {
  std::vector<std::uint32_t> order(instance.tensors.size());
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

// Number of other tensors each tensor's lifetime overlaps, by a sweep over ops: the
// tensors alive at its start plus those starting later, before its end.
std::vector<std::uint64_t> conflict_counts(const PlanInstance& instance) {
  std::vector<std::uint64_t> starts_upto(instance.op_count + 1, 0);  // starts at ops < x
  std::vector<std::uint64_t> ends_before(instance.op_count + 1, 0);  // ends at ops < x
  for (const PlanTensor& tensor : instance.tensors) {
    ++starts_upto[tensor.first + 1];
    ++ends_before[tensor.last + 1];
  }
  std::partial_sum(starts_upto.begin(), starts_upto.end(), starts_upto.begin());
  std::partial_sum(ends_before.begin(), ends_before.end(), ends_before.begin());
  std::vector<std::uint64_t> counts;
  counts.reserve(instance.tensors.size());
  for (const PlanTensor& tensor : instance.tensors) {
    // Tensors starting no later than its end, minus those that ended before its start,
    // minus itself.
    counts.push_back(starts_upto[tensor.last + 1] - ends_before[tensor.first] - 1);
  }
  return counts;
}

// A placed tensor, with what the gap scan reads kept inline (the scan is the hot loop).
struct PlacedTensor {
  std::uint64_t offset;
  std::uint64_t end;
  std::uint32_t first;
  std::uint32_t last;
};

// placed: sorted by offset.
std::uint64_t choose_offset(const std::vector<PlacedTensor>& placed, const PlanTensor& tensor,
                            GapRule rule) {
  std::uint64_t gap_start = 0;  // lowest free byte below the next overlapping tensor
  std::uint64_t best_offset = kNoFit;
  std::uint64_t best_gap = kNoFit;
  for (const PlacedTensor& other : placed) {
    if (other.first > tensor.last || tensor.first > other.last) continue;
    if (other.offset > gap_start && other.offset - gap_start >= tensor.size) {
      if (rule == GapRule::first_fit) return gap_start;
      if (other.offset - gap_start < best_gap) {
        best_gap = other.offset - gap_start;
        best_offset = gap_start;
      }
    }
    gap_start = std::max(gap_start, other.end);
  }
  return best_offset != kNoFit ? best_offset : gap_start;
}

}  // namespace

std::vector<std::uint32_t> order_by_size(const PlanInstance& instance) {
  std::vector<std::uint32_t> order = identity_order(instance);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const PlanTensor& x = instance.tensors[a];
    const PlanTensor& y = instance.tensors[b];
    return x.size != y.size ? x.size > y.size : x.length > y.length;
  });
  return order;
}

std::vector<std::uint32_t> order_by_conflicts(const PlanInstance& instance) {
  const std::vector<std::uint64_t> conflicts = conflict_counts(instance);
  std::vector<std::uint32_t> order = identity_order(instance);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (conflicts[a] != conflicts[b]) return conflicts[a] > conflicts[b];
    return instance.tensors[a].size > instance.tensors[b].size;
  });
  return order;
}

std::uint64_t place_in_order(const PlanInstance& instance, std::span<const std::uint32_t> order,
                             GapRule rule, std::vector<std::uint64_t>& offsets) {
  offsets.assign(instance.tensors.size(), 0);
  std::vector<PlacedTensor> placed;
  placed.reserve(order.size());
  std::uint64_t arena = 0;
  for (const std::uint32_t index : order) {
    const PlanTensor& tensor = instance.tensors[index];
    const std::uint64_t offset = choose_offset(placed, tensor, rule);
    const std::uint64_t end = add_or_no_fit(offset, tensor.size);
    if (end == kNoFit) return kNoFit;
    offsets[index] = offset;
    arena = std::max(arena, end);
    const auto position = std::upper_bound(
        placed.begin(), placed.end(), offset,
        [](std::uint64_t value, const PlacedTensor& p) { return value < p.offset; });
    placed.insert(position, PlacedTensor{offset, end, tensor.first, tensor.last});
  }
  return arena;
}

}  // namespace npumem::plan
