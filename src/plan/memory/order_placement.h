// Greedy placement in a given order, the method of the published planners (TFLite's greedy
// by size, TFLite Micro's greedy planner, TVM USMP's greedy_by_size/by_conflicts): each
// tensor in turn goes into a gap between the already placed tensors whose lifetimes
// overlap its own.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/memory/plan_instance.h"
#include "plan/memory/search_clock.h"

namespace npumem::plan {

enum class GapRule : std::uint8_t {
  first_fit,  // the lowest gap that holds the tensor
  best_fit,   // the smallest gap that holds it; above everything when none does
};

// Largest size first (ties: longer lifetime, then index).
std::vector<std::uint32_t> order_by_size(const PlanInstance& instance);

// Most overlapping tensors first (ties: larger size, then index).
std::vector<std::uint32_t> order_by_conflicts(const PlanInstance& instance);

// Highest priority first (ties: lower index).
std::vector<std::uint32_t> order_by_priority(std::span<const double> priorities);

// Places the tensors in `order` (a permutation of the instance's tensors); writes one
// offset per tensor and returns the arena, or kNoFit when an offset would reach 2^64-1.
// The clock, when given, is charged with the placed tensors seen.
std::uint64_t place_in_order(const PlanInstance& instance, std::span<const std::uint32_t> order,
                             GapRule rule, std::vector<std::uint64_t>& offsets,
                             SearchClock* clock = nullptr);

}  // namespace npumem::plan
