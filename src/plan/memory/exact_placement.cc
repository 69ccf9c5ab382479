#include "plan/memory/exact_placement.h"

#include <algorithm>
#include <utility>

namespace npumem::plan {
namespace {

class BranchAndBound {
 public:
  BranchAndBound(const PlanInstance& instance, std::uint64_t lower_bound, std::uint64_t upper_bound,
                 std::uint64_t node_budget)
      : instance_(instance),
        lower_bound_(lower_bound),
        node_budget_(node_budget),
        offsets_(instance.tensors.size(), 0),
        placed_(instance.tensors.size(), false) {
    result_.arena = upper_bound;
  }

  ExactPlacement run() {
    result_.finished = extend(0, 0, kNoOrder, instance_.tensors.size());
    return std::move(result_);
  }

 private:
  static constexpr std::uint32_t kNoOrder = static_cast<std::uint32_t>(-1);

  struct Child {
    std::uint64_t offset;
    std::uint32_t tensor;
  };

  // The lowest offset >= floor at which `tensor` fits beside the placed tensors, or kNoFit.
  std::uint64_t lowest_fit(std::uint32_t tensor, std::uint64_t floor) const {
    const PlanTensor& planned = instance_.tensors[tensor];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;  // [offset, end)
    for (std::uint32_t other = 0; other < placed_.size(); ++other) {
      if (!placed_[other] || !lifetimes_overlap(instance_.tensors[other], planned)) continue;
      taken.emplace_back(offsets_[other], offsets_[other] + instance_.tensors[other].size);
    }
    std::sort(taken.begin(), taken.end());
    std::uint64_t candidate = floor;
    for (const auto& [start, end] : taken) {
      if (start >= add_or_no_fit(candidate, planned.size)) break;
      candidate = std::max(candidate, end);
    }
    return add_or_no_fit(candidate, planned.size) == kNoFit ? kNoFit : candidate;
  }

  // Returns false when the node budget ran out (the search is then not exhaustive).
  bool extend(std::uint64_t arena, std::uint64_t last_offset, std::uint32_t last_tensor,
              std::size_t unplaced) {
    if (++result_.nodes > node_budget_) return false;
    if (unplaced == 0) {
      record(arena);
      return true;
    }
    std::vector<Child> children;
    std::uint64_t bound = std::max(arena, lower_bound_);
    for (std::uint32_t tensor = 0; tensor < placed_.size(); ++tensor) {
      if (placed_[tensor]) continue;
      const std::uint64_t size = instance_.tensors[tensor].size;
      bound = std::max(bound, add_or_no_fit(lowest_fit(tensor, last_offset), size));
      const std::uint64_t offset = lowest_fit(tensor, 0);
      const bool canonical =
          offset > last_offset ||
          (offset == last_offset && (last_tensor == kNoOrder || tensor > last_tensor));
      if (canonical && offset != kNoFit) children.push_back({offset, tensor});
    }
    if (bound >= result_.arena) return true;
    std::sort(children.begin(), children.end(), [](const Child& a, const Child& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.tensor < b.tensor;
    });
    for (const Child& child : children) {
      const std::uint64_t end = child.offset + instance_.tensors[child.tensor].size;
      if (std::max(arena, end) >= result_.arena) continue;
      placed_[child.tensor] = true;
      offsets_[child.tensor] = child.offset;
      const bool complete = extend(std::max(arena, end), child.offset, child.tensor, unplaced - 1);
      placed_[child.tensor] = false;
      if (!complete) return false;
      if (result_.arena <= lower_bound_) return true;
    }
    return true;
  }

  void record(std::uint64_t arena) {
    result_.arena = arena;
    result_.offsets = offsets_;
    result_.improved = true;
  }

  const PlanInstance& instance_;
  std::uint64_t lower_bound_;
  std::uint64_t node_budget_;
  std::vector<std::uint64_t> offsets_;
  std::vector<bool> placed_;
  ExactPlacement result_;
};

}  // namespace

ExactPlacement place_exactly(const PlanInstance& instance, std::uint64_t lower_bound,
                             std::uint64_t upper_bound, std::uint64_t node_budget) {
  return BranchAndBound(instance, lower_bound, upper_bound, node_budget).run();
}

}  // namespace npumem::plan
