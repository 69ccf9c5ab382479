// The two figures every memory plan is measured against: the lower bound and the naive size.
#include <algorithm>

#include "npumem/plan.h"
#include "plan/memory/plan_instance.h"

namespace npumem::plan {

std::uint64_t memory_lower_bound(std::span<const TensorLifetime> tensors, std::uint64_t alignment) {
  const std::vector<std::uint64_t> live = live_bytes_per_op(make_plan_instance(tensors, alignment));
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

std::uint64_t naive_memory(std::span<const TensorLifetime> tensors, std::uint64_t alignment) {
  return total_bytes(make_plan_instance(tensors, alignment));
}

double MemoryPlan::ratio() const {
  if (lower_bound_bytes == 0) return 1.0;  // no bytes to place: the empty plan is optimal
  return static_cast<double>(arena_bytes) / static_cast<double>(lower_bound_bytes);
}

}  // namespace npumem::plan
