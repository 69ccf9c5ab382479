#include "plan/memory/filler_placement.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "plan/memory/random_lifetimes.h"
#include "plan/memory/skyline_packing.h"
#include "plan/memory/skyline_priorities.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

TEST(FillerPlacementTest, FillersAreTheSmallestTensorsUpToTheShare) {
  // 1,000 bytes in all; 3 % of them is 30 bytes: 4 + 6 + 10 (20), and 20 more would pass it.
  const std::vector<TensorLifetime> tensors{{500, 0, 1}, {10, 0, 0}, {4, 1, 1},
                                            {20, 0, 1},  {6, 0, 1},  {460, 1, 1}};
  const PlanInstance instance = make_plan_instance(tensors, 1);
  const FillerSplit split = split_fillers(instance, 0.03);
  EXPECT_EQ(split.fillers, (std::vector<std::uint32_t>{1, 4, 2}));  // largest first
  EXPECT_EQ(split.without_fillers.input_index, (std::vector<std::size_t>{0, 3, 5}));
  EXPECT_EQ(split.without_fillers.op_count, instance.op_count);
  EXPECT_EQ(split.without_fillers.tensors[1].size, 20u);
  EXPECT_TRUE(split_fillers(instance, 0.0).fillers.empty());
}

TEST(FillerPlacementTest, AFillerGoesIntoAGapAndTheArenaReachesTheBound) {
  // A (ops 0-9) at 0; B (ops 0-4) and C (ops 5-9) above it; C is shorter than B, so a gap
  // of 20 bytes opens above C. The filler F (ops 6-8, 20 bytes) fits there exactly: the
  // arena stays at the bound, 150 bytes live at ops 0-4 and 6-8.
  const std::vector<TensorLifetime> tensors{{100, 0, 9}, {50, 0, 4}, {30, 5, 9}, {20, 6, 8}};
  const PlanInstance instance = make_plan_instance(tensors, 1);
  const FillerSplit split = split_fillers(instance, 0.1);
  ASSERT_EQ(split.fillers, (std::vector<std::uint32_t>{3}));
  const std::vector<std::uint64_t> plan{0, 100, 100};  // A, B, C
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_with_fillers(instance, split, plan, offsets), 150u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 100, 100, 130}));
}

TEST(FillerPlacementTest, TheLongestFillerGoesFirst) {
  // Over ops 0-11: A (100 bytes) at 0, P (ops 10-11) at 100 and T above both at 120 leave a
  // gap of 20 bytes at 100 over ops 0-9; B1 (ops 0-1) and B2 (ops 4-11) at 150 under U at
  // 175 leave one of 25 bytes at 150 over ops 2-3. The long filler (15 bytes, ops 0-9) fits
  // only the first gap; the short one (18 bytes, ops 2-3) fits either. Largest first, the
  // short one would take the first gap and the long one go on top (arena 215).
  const std::vector<TensorLifetime> tensors{{100, 0, 11}, {20, 10, 11}, {30, 0, 11}, {25, 0, 1},
                                            {25, 4, 11},  {25, 0, 11},  {15, 0, 9},  {18, 2, 3}};
  const PlanInstance instance = make_plan_instance(tensors, 1);
  const FillerSplit split = split_fillers(instance, 0.15);
  ASSERT_EQ(split.fillers, (std::vector<std::uint32_t>{7, 6}));
  const std::vector<std::uint64_t> plan{0, 100, 120, 150, 150, 175};  // A, P, T, B1, B2, U
  std::vector<std::uint64_t> offsets;
  EXPECT_EQ(place_with_fillers(instance, split, plan, offsets), 200u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 100, 120, 150, 150, 175, 100, 150}));
}

TEST(FillerPlacementTest, NoTensorMovesUpAndThePlanStaysValid) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    RandomLifetimeSpec spec;
    spec.tensors = 800;
    spec.ops = 160;
    spec.seed = seed;
    const std::vector<TensorLifetime> tensors = random_lifetimes(spec);
    const PlanInstance instance = make_plan_instance(tensors, 64);
    const FillerSplit split = split_fillers(instance, 0.02);
    ASSERT_FALSE(split.fillers.empty());
    const PlanInstance& rest = split.without_fillers;
    const std::vector<std::uint64_t> live = live_bytes_per_op(rest);
    SkylinePacker packer(rest, live);
    std::vector<std::uint64_t> plan;
    const std::uint64_t rest_arena = packer.pack(
        weighted_priorities(priority_features(rest, live), {1.0, 0.01, 0.0}), kNoFit, plan);
    std::vector<std::uint64_t> offsets;
    const std::uint64_t arena = place_with_fillers(instance, split, plan, offsets);
    for (std::size_t i = 0; i < rest.tensors.size(); ++i) {
      EXPECT_LE(offsets[rest.input_index[i]], plan[i]) << "seed " << seed;
    }
    std::uint64_t fillers_top = 0;
    for (const std::uint32_t filler : split.fillers) {
      fillers_top = std::max(fillers_top, offsets[filler] + instance.tensors[filler].size);
    }
    // The rest stays within its own arena, so only the fillers can raise it.
    EXPECT_LE(arena, std::max(rest_arena, fillers_top)) << "seed " << seed;
    EXPECT_EQ(testing::instance_plan_problem(tensors, instance, offsets, arena, 64), "")
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace npumem::plan
