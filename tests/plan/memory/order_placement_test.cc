#include "plan/memory/order_placement.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "plan/memory/random_lifetimes.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

std::vector<std::uint32_t> in_order(std::size_t count) {
  std::vector<std::uint32_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = static_cast<std::uint32_t>(i);
  return order;
}

// Two gaps open below a long-lived tensor: 3 units at offset 0 and 1 unit at offset 5.
// A 1-unit tensor goes into the lowest gap with first fit, the tightest with best fit.
const std::vector<TensorLifetime> kTwoGaps{
    {3, 0, 0},  // 0: frees [0, 3) after op 0
    {2, 0, 9},  // 1: [3, 5) all along
    {1, 0, 0},  // 2: frees [5, 6) after op 0
    {4, 0, 9},  // 3: [6, 10) all along
    {1, 5, 6},  // 4: the tensor to place
};

TEST(OrderPlacementTest, FirstFitTakesTheLowestGapAndBestFitTheTightest) {
  const PlanInstance instance = make_plan_instance(kTwoGaps, 1);
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_in_order(instance, in_order(5), GapRule::first_fit, offsets), 10u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 3, 5, 6, 0}));
  EXPECT_EQ(place_in_order(instance, in_order(5), GapRule::best_fit, offsets), 10u);
  EXPECT_EQ(offsets[4], 5u);
}

TEST(OrderPlacementTest, ATensorThatFitsNoGapGoesOnTop) {
  const std::vector<TensorLifetime> tensors{{4, 0, 3}, {4, 2, 5}, {4, 1, 2}};
  const PlanInstance instance = make_plan_instance(tensors, 1);
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_in_order(instance, in_order(3), GapRule::best_fit, offsets), 12u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 4, 8}));
}

TEST(OrderPlacementTest, OrdersBySizeAndByConflicts) {
  const std::vector<TensorLifetime> tensors{{10, 0, 0}, {30, 0, 5}, {30, 2, 3}, {20, 1, 9}};
  const PlanInstance instance = make_plan_instance(tensors, 1);
  // Equal sizes: the longer lifetime first.
  EXPECT_EQ(order_by_size(instance), (std::vector<std::uint32_t>{1, 2, 3, 0}));
  // Conflicts: 0 meets 1; 1 meets 0, 2, 3; 2 meets 1, 3; 3 meets 1, 2.
  EXPECT_EQ(order_by_conflicts(instance), (std::vector<std::uint32_t>{1, 2, 3, 0}));
}

TEST(OrderPlacementTest, EveryOrderAndRuleGivesAValidPlan) {
  for (std::uint64_t seed = 1; seed <= 15; ++seed) {
    const auto tensors = testing::random_tensors(60, 30, 1000, seed);
    const PlanInstance instance = make_plan_instance(tensors, 64);
    for (const auto& order : {order_by_size(instance), order_by_conflicts(instance)}) {
      for (const GapRule rule : {GapRule::first_fit, GapRule::best_fit}) {
        std::vector<std::uint64_t> offsets;
        const std::uint64_t arena = place_in_order(instance, order, rule, offsets);
        EXPECT_EQ(testing::instance_plan_problem(tensors, instance, offsets, arena, 64), "")
            << "seed " << seed;
      }
    }
  }
}

// The placement from its definition: each tensor in turn goes into the lowest (first fit) or
// the smallest (best fit) gap between all placed tensors whose lifetimes overlap its own,
// or above them all.
std::vector<std::uint64_t> placed_by_definition(const PlanInstance& instance,
                                                const std::vector<std::uint32_t>& order,
                                                GapRule rule) {
  std::vector<std::uint64_t> offsets(instance.tensors.size(), 0);
  std::vector<std::uint32_t> placed;
  for (const std::uint32_t index : order) {
    const PlanTensor& tensor = instance.tensors[index];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;  // [offset, end)
    for (const std::uint32_t other : placed) {
      if (lifetimes_overlap(tensor, instance.tensors[other])) {
        taken.emplace_back(offsets[other], offsets[other] + instance.tensors[other].size);
      }
    }
    std::sort(taken.begin(), taken.end());
    std::uint64_t gap_start = 0;
    std::uint64_t chosen = kNoFit;
    std::uint64_t chosen_gap = kNoFit;
    for (const auto& [offset, end] : taken) {
      const std::uint64_t gap = offset > gap_start ? offset - gap_start : 0;
      if (gap >= tensor.size && gap < chosen_gap &&
          (rule == GapRule::best_fit || chosen == kNoFit)) {
        chosen = gap_start;
        chosen_gap = gap;
      }
      gap_start = std::max(gap_start, end);
    }
    offsets[index] = chosen != kNoFit ? chosen : gap_start;
    placed.push_back(index);
  }
  return offsets;
}

TEST(OrderPlacementTest, PlacesAsTheDefinitionSays) {
  // Short lifetimes, alone and with a few long ones (which meet many blocks of ops), and
  // uniform ones.
  std::vector<std::vector<TensorLifetime>> sets;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    RandomLifetimeSpec spec;
    spec.tensors = 600;
    spec.ops = 300;
    spec.mean_length = 4;
    spec.seed = seed;
    std::vector<TensorLifetime> short_lived = random_lifetimes(spec);
    sets.push_back(short_lived);
    const std::vector<TensorLifetime> long_lived = testing::random_tensors(40, 300, 5000, seed);
    short_lived.insert(short_lived.end(), long_lived.begin(), long_lived.end());
    sets.push_back(short_lived);
    sets.push_back(testing::random_tensors(300, 100, 5000, seed));
  }
  for (const std::vector<TensorLifetime>& tensors : sets) {
    const PlanInstance instance = make_plan_instance(tensors, 64);
    for (const auto& order : {order_by_size(instance), order_by_conflicts(instance),
                              in_order(instance.tensors.size())}) {
      for (const GapRule rule : {GapRule::first_fit, GapRule::best_fit}) {
        std::vector<std::uint64_t> offsets;
        place_in_order(instance, order, rule, offsets);
        EXPECT_EQ(offsets, placed_by_definition(instance, order, rule));
      }
    }
  }
}

TEST(OrderPlacementTest, OrdersByPriority) {
  const std::vector<double> priorities{0.5, 2.0, -1.0, 2.0};
  EXPECT_EQ(order_by_priority(priorities), (std::vector<std::uint32_t>{1, 3, 0, 2}));
}

TEST(OrderPlacementTest, AnArenaPastTwoToThe64IsNoFit) {
  const std::vector<TensorLifetime> tensors{
      {1ull << 62, 0, 1}, {1ull << 63, 0, 1}, {1ull << 62, 0, 1}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_in_order(instance, in_order(3), GapRule::first_fit, offsets), kNoFit);
}

}  // namespace
}  // namespace npumem::plan
