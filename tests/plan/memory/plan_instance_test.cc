#include "plan/memory/plan_instance.h"

#include <gtest/gtest.h>

#include "npumem/errors.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

constexpr std::uint64_t kMax = ~std::uint64_t{0};

TEST(PlanInstanceTest, AlignUpRoundsToTheAlignment) {
  EXPECT_EQ(align_up(0, 64), 0u);
  EXPECT_EQ(align_up(1, 64), 64u);
  EXPECT_EQ(align_up(64, 64), 64u);
  EXPECT_EQ(align_up(65, 64), 128u);
  EXPECT_EQ(align_up(5, 1), 5u);
  EXPECT_EQ(align_up(kMax - 63, 64), kMax - 63);
}

TEST(PlanInstanceTest, AlignUpPastTwoToThe64Throws) {
  EXPECT_THROW(align_up(kMax - 62, 64), Error);
  EXPECT_THROW(align_up((1ull << 63) + 1, 1ull << 63), Error);
}

TEST(PlanInstanceTest, AlignmentMustBeAPowerOfTwo) {
  EXPECT_THROW(align_up(1, 0), ConfigError);
  EXPECT_THROW(align_up(1, 48), ConfigError);
  const std::vector<TensorLifetime> tensors{{10, 0, 1}};
  EXPECT_THROW(make_plan_instance(tensors, 3), ConfigError);
}

TEST(PlanInstanceTest, DropsZeroByteTensorsAndAlignsSizes) {
  const std::vector<TensorLifetime> tensors{{0, 0, 5}, {100, 2, 3}, {64, 7, 9}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  ASSERT_EQ(instance.tensors.size(), 2u);
  EXPECT_EQ(instance.input_index, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(instance.tensors[0].size, 128u);
  EXPECT_EQ(instance.tensors[1].size, 64u);
  EXPECT_EQ(instance.tensors[0].length, 2u);
  EXPECT_EQ(instance.tensors[1].length, 3u);
}

TEST(PlanInstanceTest, RenumberingKeepsWhichLifetimesOverlap) {
  const auto tensors = testing::random_tensors(300, 1'000'000, 1000, 7);
  const PlanInstance instance = make_plan_instance(tensors, 1);
  ASSERT_EQ(instance.tensors.size(), tensors.size());
  EXPECT_LE(instance.op_count, 2 * tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_LT(instance.tensors[i].last, instance.op_count);
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      ASSERT_EQ(lifetimes_overlap(instance.tensors[i], instance.tensors[j]),
                testing::lifetimes_meet(tensors[i], tensors[j]))
          << i << " " << j;
    }
  }
}

TEST(PlanInstanceTest, LiveBytesPerOpSumsTheTensorsLiveThere) {
  // Ops 10, 20, 30, 40 become 0..3.
  const std::vector<TensorLifetime> tensors{{64, 10, 20}, {128, 20, 30}, {64, 40, 40}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  EXPECT_EQ(live_bytes_per_op(instance), (std::vector<std::uint64_t>{64, 192, 128, 64}));
}

TEST(PlanInstanceTest, LiveBytesReachingTwoToThe64Throw) {
  const std::vector<TensorLifetime> tensors{{1ull << 63, 0, 1}, {1ull << 63, 1, 2}};
  EXPECT_THROW(live_bytes_per_op(make_plan_instance(tensors, 64)), Error);
  const std::vector<TensorLifetime> apart{{1ull << 63, 0, 1}, {1ull << 63, 2, 3}};
  EXPECT_EQ(live_bytes_per_op(make_plan_instance(apart, 64)),
            (std::vector<std::uint64_t>{1ull << 63, 1ull << 63, 1ull << 63, 1ull << 63}));
}

TEST(PlanInstanceTest, TotalBytesSaturates) {
  const std::vector<TensorLifetime> small{{1, 0, 0}, {65, 1, 1}};
  EXPECT_EQ(total_bytes(make_plan_instance(small, 64)), 192u);
  const std::vector<TensorLifetime> huge{{1ull << 63, 0, 0}, {1ull << 63, 1, 1}};
  EXPECT_EQ(total_bytes(make_plan_instance(huge, 64)), kNoFit);
}

TEST(PlanInstanceTest, OffsetsReturnToInputOrderWithZerosForEmptyTensors) {
  const std::vector<TensorLifetime> tensors{{10, 0, 0}, {0, 0, 0}, {10, 0, 0}};
  const PlanInstance instance = make_plan_instance(tensors, 64);
  const std::vector<std::uint64_t> offsets{64, 0};
  EXPECT_EQ(offsets_in_input_order(instance, offsets, tensors.size()),
            (std::vector<std::uint64_t>{64, 0, 0}));
}

TEST(PlanInstanceTest, AddOrNoFitSaturates) {
  EXPECT_EQ(add_or_no_fit(2, 3), 5u);
  EXPECT_EQ(add_or_no_fit(kMax - 1, 1), kNoFit);
  EXPECT_EQ(add_or_no_fit(kMax - 1, 2), kNoFit);
}

}  // namespace
}  // namespace npumem::plan
