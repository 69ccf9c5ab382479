// Exact placement for small instances: branch and bound over placement orders.
//
// Placing tensors one by one at the lowest offset that fits (first fit) reaches an optimal
// plan for some order: take an optimal plan, sort it by offset and re-place it first fit;
// no offset rises, and repeating this ends at an optimal plan that first fit reproduces
// with offsets that never decrease along the order. So the search only extends an order
// with a tensor whose first-fit offset is not below the last one (ties by index), and it
// prunes with a bound: every unplaced tensor will sit at or above the last offset.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/memory/plan_instance.h"

namespace npumem::plan {

struct ExactPlacement {
  bool finished = false;  // the search ended within its node budget: the result is optimal
  bool improved = false;  // it found a plan below upper_bound; offsets and arena hold it
  std::uint64_t arena = 0;
  std::vector<std::uint64_t> offsets;
  std::uint64_t nodes = 0;  // search nodes visited
};

// Looks for a plan with an arena below upper_bound (the best known), stopping early at
// lower_bound. Visits at most node_budget nodes.
ExactPlacement place_exactly(const PlanInstance& instance, std::uint64_t lower_bound,
                             std::uint64_t upper_bound, std::uint64_t node_budget);

}  // namespace npumem::plan
