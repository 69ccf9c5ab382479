#include "plan/memory/filler_placement.h"

#include <algorithm>
#include <numeric>

#include "plan/memory/order_placement.h"

namespace npumem::plan {

FillerSplit split_fillers(const PlanInstance& instance, double share) {
  std::vector<std::uint32_t> by_size(instance.tensors.size());
  std::iota(by_size.begin(), by_size.end(), 0u);
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::uint32_t a, std::uint32_t b) {
    return instance.tensors[a].size < instance.tensors[b].size;
  });
  const double filler_bytes = share * static_cast<double>(total_bytes(instance));
  std::vector<bool> is_filler(instance.tensors.size(), false);
  FillerSplit split;
  double bytes = 0;
  for (const std::uint32_t index : by_size) {
    bytes += static_cast<double>(instance.tensors[index].size);
    if (bytes > filler_bytes) break;
    is_filler[index] = true;
    split.fillers.push_back(index);
  }
  std::reverse(split.fillers.begin(), split.fillers.end());
  split.without_fillers.op_count = instance.op_count;
  for (std::uint32_t i = 0; i < instance.tensors.size(); ++i) {
    if (is_filler[i]) continue;
    split.without_fillers.tensors.push_back(instance.tensors[i]);
    split.without_fillers.input_index.push_back(i);
  }
  return split;
}

std::uint64_t place_with_fillers(const PlanInstance& instance, const FillerSplit& split,
                                 std::span<const std::uint64_t> plan,
                                 std::vector<std::uint64_t>& offsets, SearchClock* clock) {
  // First fit in order of offset moves no tensor up: each one's old place is still free
  // of those before it, which only moved down.
  std::vector<std::uint32_t> order(split.without_fillers.tensors.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return plan[a] < plan[b]; });
  for (std::uint32_t& index : order) {
    index = static_cast<std::uint32_t>(split.without_fillers.input_index[index]);
  }
  // The longest fillers first: they need a gap over the most ops, which the short ones
  // placed before them would break up.
  std::vector<std::uint32_t> fillers = split.fillers;
  std::stable_sort(fillers.begin(), fillers.end(), [&](std::uint32_t a, std::uint32_t b) {
    return instance.tensors[a].length > instance.tensors[b].length;
  });
  order.insert(order.end(), fillers.begin(), fillers.end());
  return place_in_order(instance, order, GapRule::first_fit, offsets, clock);
}

}  // namespace npumem::plan
