#include "plan/memory/order_placement.h"

#include <gtest/gtest.h>

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

TEST(OrderPlacementTest, AnArenaPastTwoToThe64IsNoFit) {
  const std::vector<TensorLifetime> tensors{
      {1ull << 62, 0, 1}, {1ull << 63, 0, 1}, {1ull << 62, 0, 1}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_in_order(instance, in_order(3), GapRule::first_fit, offsets), kNoFit);
}

}  // namespace
}  // namespace npumem::plan
