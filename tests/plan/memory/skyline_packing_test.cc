#include "plan/memory/skyline_packing.h"

#include <gtest/gtest.h>

#include <random>

#include "plan_checker.h"

namespace npumem::plan {
namespace {

std::vector<double> random_priorities(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<double> priorities(count);
  for (double& priority : priorities) priority = static_cast<double>(random() % 1000);
  return priorities;
}

TEST(SkylinePackingTest, EmptyInstanceHasAnEmptyArena) {
  const PlanInstance instance = make_plan_instance({}, 64);
  SkylinePacker packer(instance, live_bytes_per_op(instance));
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(packer.pack({}, kNoFit, offsets), 0u);
  EXPECT_TRUE(offsets.empty());
}

TEST(SkylinePackingTest, PacksAChainAtItsLowerBound) {
  // Each tensor meets only its neighbours: two slots alternate.
  std::vector<TensorLifetime> chain;
  for (std::uint64_t op = 0; op < 20; ++op) chain.push_back({64 * (1 + op % 3), op, op + 1});
  const PlanInstance instance = make_plan_instance(chain, 64);
  SkylinePacker packer(instance, live_bytes_per_op(instance));
  std::vector<std::uint64_t> offsets;
  const std::vector<double> longest_first(chain.size(), 1.0);
  const std::uint64_t arena = packer.pack(longest_first, kNoFit, offsets);
  EXPECT_EQ(testing::instance_plan_problem(chain, instance, offsets, arena, 64), "");
  EXPECT_EQ(arena, memory_lower_bound(chain, 64));
}

TEST(SkylinePackingTest, HigherPriorityFillsTheLowestStretchFirst) {
  // Both fit the empty skyline; the higher priority goes to offset 0.
  const std::vector<TensorLifetime> tensors{{64, 0, 3}, {128, 1, 2}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  SkylinePacker packer(instance, live_bytes_per_op(instance));
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(packer.pack(std::vector<double>{1.0, 2.0}, kNoFit, offsets), 192u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{128, 0}));
  EXPECT_EQ(packer.pack(std::vector<double>{2.0, 1.0}, kNoFit, offsets), 192u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 64}));
}

TEST(SkylinePackingTest, EveryPriorityGivesAValidPlan) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto tensors = testing::random_tensors(80, 25 + seed, 5000, seed);
    const PlanInstance instance = make_plan_instance(tensors, 64);
    SkylinePacker packer(instance, live_bytes_per_op(instance));
    for (std::uint64_t run = 0; run < 3; ++run) {
      std::vector<std::uint64_t> offsets;
      const std::uint64_t arena =
          packer.pack(random_priorities(tensors.size(), seed * 10 + run), kNoFit, offsets);
      ASSERT_EQ(testing::instance_plan_problem(tensors, instance, offsets, arena, 64), "")
          << "seed " << seed << " run " << run;
    }
  }
}

TEST(SkylinePackingTest, StopsOnceTheArenaReachesTheCutoff) {
  const auto tensors = testing::random_tensors(200, 40, 5000, 3);
  const PlanInstance instance = make_plan_instance(tensors, 64);
  SkylinePacker packer(instance, live_bytes_per_op(instance));
  const std::vector<double> priorities = random_priorities(tensors.size(), 3);
  std::vector<std::uint64_t> offsets;
  const std::uint64_t full = packer.pack(priorities, kNoFit, offsets);
  EXPECT_GE(packer.pack(priorities, full / 2, offsets), full / 2);
  EXPECT_EQ(packer.pack(priorities, full + 1, offsets), full);
}

TEST(SkylinePackingTest, AnArenaPastTwoToThe64IsNoFit) {
  const std::vector<TensorLifetime> tensors{
      {1ull << 63, 0, 1}, {1ull << 62, 0, 1}, {1ull << 62, 0, 1}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  // live_bytes_per_op rejects this instance; the packer must still not wrap around.
  const std::vector<std::uint64_t> saturated_live(instance.op_count, kNoFit);
  SkylinePacker packer(instance, saturated_live);
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(packer.pack(std::vector<double>{3, 2, 1}, kNoFit, offsets), kNoFit);
}

}  // namespace
}  // namespace npumem::plan
