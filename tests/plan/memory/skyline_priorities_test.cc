#include "plan/memory/skyline_priorities.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "plan_checker.h"

namespace npumem::plan {
namespace {

struct Features {
  PlanInstance instance;
  PriorityFeatures features;
};

Features features_of(const std::vector<TensorLifetime>& tensors) {
  Features result{make_plan_instance(tensors, 64), {}};
  result.features = priority_features(result.instance, live_bytes_per_op(result.instance));
  return result;
}

TEST(SkylinePrioritiesTest, FeaturesAreLogLengthLogSizeAndLogPressure) {
  // Live bytes: op 0: 64, op 1: 64 + 192 = 256, op 2: 192. Peak 256.
  const Features f = features_of({{64, 0, 1}, {192, 1, 2}, {64, 5, 5}});
  EXPECT_DOUBLE_EQ(f.features.log_length[0], std::log(2.0));
  EXPECT_DOUBLE_EQ(f.features.log_length[2], std::log(1.0));
  EXPECT_DOUBLE_EQ(f.features.log_size[1], std::log(192.0));
  EXPECT_DOUBLE_EQ(f.features.log_pressure[0], 0.0);  // live at the peak
  EXPECT_DOUBLE_EQ(f.features.log_pressure[1], 0.0);
  EXPECT_DOUBLE_EQ(f.features.log_pressure[2], std::log(64.0 / 256.0));
}

TEST(SkylinePrioritiesTest, WeightedPrioritiesCombineTheFeatures) {
  const Features f = features_of({{64, 0, 1}, {192, 1, 2}});
  const std::vector<double> priorities = weighted_priorities(f.features, {2.0, 0.5, 3.0});
  EXPECT_DOUBLE_EQ(priorities[1], 2.0 * std::log(2.0) + 0.5 * std::log(192.0));
}

TEST(SkylinePrioritiesTest, RandomPrioritiesDependOnTheSeedOnly) {
  const Features f = features_of(testing::random_tensors(50, 20, 1000, 1));
  std::mt19937_64 a(5);
  std::mt19937_64 b(5);
  std::mt19937_64 c(6);
  const std::vector<double> first = random_priorities(f.features, a);
  EXPECT_EQ(first, random_priorities(f.features, b));
  EXPECT_NE(first, random_priorities(f.features, c));
  EXPECT_NE(first, random_priorities(f.features, a));  // the generator moved on
}

TEST(SkylinePrioritiesTest, NoiseRaisesEveryPriorityByAtMostItsBound) {
  std::mt19937_64 random(5);
  const std::vector<double> before{-3.0, 0.0, 1.5, 7.0, 7.0, 20.0};
  std::vector<double> after = before;
  add_priority_noise(after, 0.1, random);
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_GE(after[i], before[i]);
    EXPECT_LT(after[i] - before[i], std::log1p(0.1));
  }
  EXPECT_NE(after[3] - before[3], after[4] - before[4]);  // ties break
  std::vector<double> unchanged = before;
  add_priority_noise(unchanged, 0.0, random);
  EXPECT_EQ(unchanged, before);
}

TEST(SkylinePrioritiesTest, PerturbingMovesOneToTwentyPriorities) {
  std::mt19937_64 random(9);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<double> before(100, 0.0);
    std::vector<double> after = before;
    perturb_priorities(after, random);
    std::size_t moved = 0;
    for (std::size_t i = 0; i < after.size(); ++i) {
      EXPECT_LE(std::abs(after[i] - before[i]), 20.0);  // one move each, possibly repeated
      moved += after[i] != before[i] ? 1 : 0;
    }
    EXPECT_GE(moved, 1u);
    EXPECT_LE(moved, 20u);
  }
}

TEST(SkylinePrioritiesTest, BoostingRaisesOnlyTheCandidatesOneToTwentyOfThem) {
  std::mt19937_64 random(11);
  const std::vector<std::uint32_t> candidates{3,  10, 11, 12, 40, 41, 42, 43, 44, 45, 46, 47, 48,
                                              49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60};
  std::size_t most = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<double> before(100, 1.0);
    std::vector<double> after = before;
    boost_priorities(after, candidates, random);
    std::size_t boosted = 0;
    for (std::size_t i = 0; i < after.size(); ++i) {
      const bool candidate = std::find(candidates.begin(), candidates.end(), i) != candidates.end();
      if (!candidate) {
        EXPECT_EQ(after[i], before[i]) << i;
      }
      EXPECT_GE(after[i], before[i]) << i;  // never lowered
      boosted += after[i] != before[i] ? 1 : 0;
    }
    EXPECT_LE(boosted, 20u);
    most = std::max(most, boosted);
  }
  EXPECT_GT(most, 1u);
}

TEST(SkylinePrioritiesTest, BoostingNoCandidatesChangesNothing) {
  std::mt19937_64 random(3);
  std::vector<double> priorities(10, 2.0);
  boost_priorities(priorities, {}, random);
  EXPECT_EQ(priorities, std::vector<double>(10, 2.0));
}

}  // namespace
}  // namespace npumem::plan
