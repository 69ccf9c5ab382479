#include "plan/memory/exact_placement.h"

#include <gtest/gtest.h>

#include "plan_checker.h"

namespace npumem::plan {
namespace {

// Whether the tensors fit an arena of `arena` bytes: tries every offset of every tensor
// (no first-fit argument involved), tensor by tensor.
bool fits_by_enumeration(const std::vector<TensorLifetime>& tensors, std::uint64_t arena,
                         std::vector<std::uint64_t>& offsets, std::size_t next) {
  if (next == tensors.size()) return true;
  if (tensors[next].bytes > arena) return false;
  for (std::uint64_t offset = 0; offset + tensors[next].bytes <= arena; ++offset) {
    bool clash = false;
    for (std::size_t other = 0; other < next && !clash; ++other) {
      clash = testing::lifetimes_meet(tensors[other], tensors[next]) &&
              offsets[other] < offset + tensors[next].bytes &&
              offset < offsets[other] + tensors[other].bytes;
    }
    if (clash) continue;
    offsets[next] = offset;
    if (fits_by_enumeration(tensors, arena, offsets, next + 1)) return true;
  }
  return false;
}

std::uint64_t optimum_by_enumeration(const std::vector<TensorLifetime>& tensors) {
  std::vector<std::uint64_t> offsets(tensors.size());
  std::uint64_t arena = testing::brute_force_lower_bound(tensors, 1);
  while (!fits_by_enumeration(tensors, arena, offsets, 0)) ++arena;
  return arena;
}

ExactPlacement exact(const std::vector<TensorLifetime>& tensors, std::uint64_t upper_bound,
                     std::uint64_t node_budget = 1'000'000) {
  const PlanInstance instance = make_plan_instance(tensors, 1);
  const std::vector<std::uint64_t> live = live_bytes_per_op(instance);
  const std::uint64_t lower = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  return place_exactly(instance, lower, upper_bound, node_budget);
}

TEST(ExactPlacementTest, FindsTheOptimumOfSmallInstances) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const auto tensors = testing::random_tensors(2 + seed % 5, 4, 4, seed);
    const std::uint64_t optimum = optimum_by_enumeration(tensors);
    std::uint64_t naive = 0;
    for (const TensorLifetime& tensor : tensors) naive += tensor.bytes;
    const ExactPlacement result = exact(tensors, naive + 1);
    ASSERT_TRUE(result.finished) << "seed " << seed;
    ASSERT_TRUE(result.improved) << "seed " << seed;
    EXPECT_EQ(result.arena, optimum) << "seed " << seed;
    const PlanInstance instance = make_plan_instance(tensors, 1);
    EXPECT_EQ(testing::instance_plan_problem(tensors, instance, result.offsets, result.arena, 1),
              "")
        << "seed " << seed;
  }
}

// Given the optimum as the best known plan, the search ends without a better one: a proof.
TEST(ExactPlacementTest, ProvesThatNothingBeatsTheOptimum) {
  const auto tensors = testing::random_tensors(7, 5, 4, 11);
  const std::uint64_t optimum = optimum_by_enumeration(tensors);
  const ExactPlacement improved = exact(tensors, optimum + 1);
  EXPECT_TRUE(improved.finished);
  EXPECT_TRUE(improved.improved);
  EXPECT_EQ(improved.arena, optimum);
  const ExactPlacement none_better = exact(tensors, optimum);
  EXPECT_TRUE(none_better.finished);
  EXPECT_FALSE(none_better.improved);
}

TEST(ExactPlacementTest, StopsWhenTheNodeBudgetRunsOut) {
  const auto tensors = testing::random_tensors(12, 6, 50, 4);
  const ExactPlacement result = exact(tensors, ~std::uint64_t{0} - 1, 5);
  EXPECT_FALSE(result.finished);
  EXPECT_LE(result.nodes, 6u);
}

TEST(ExactPlacementTest, NoTensorsIsOptimalAtZero) {
  const ExactPlacement result = exact({}, 1);
  EXPECT_TRUE(result.finished);
  EXPECT_TRUE(result.improved);
  EXPECT_EQ(result.arena, 0u);
}

}  // namespace
}  // namespace npumem::plan
