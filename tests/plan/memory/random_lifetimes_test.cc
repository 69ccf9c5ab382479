#include "plan/memory/random_lifetimes.h"

#include <gtest/gtest.h>

#include "npumem/errors.h"

namespace npumem::plan {
namespace {

TEST(RandomLifetimesTest, FollowsTheSpec) {
  RandomLifetimeSpec spec;
  spec.tensors = 5000;
  spec.ops = 400;
  const std::vector<TensorLifetime> tensors = random_lifetimes(spec);
  ASSERT_EQ(tensors.size(), 5000u);
  double length_sum = 0;
  std::size_t small = 0;
  for (const TensorLifetime& tensor : tensors) {
    EXPECT_GE(tensor.bytes, spec.min_bytes);
    EXPECT_LE(tensor.bytes, spec.max_bytes);
    EXPECT_LE(tensor.first_op, tensor.last_op);
    EXPECT_LT(tensor.last_op, spec.ops);
    length_sum += static_cast<double>(tensor.last_op - tensor.first_op);
    small += tensor.bytes < 32 * 1024 ? 1 : 0;
  }
  // Cut at the last op, lifetimes average a little under the mean of 25.
  EXPECT_GT(length_sum / 5000, 18.0);
  EXPECT_LT(length_sum / 5000, 25.0);
  // Log-uniform from 256 B to 4 MiB: 7 of 14 doublings lie below 32 KiB.
  EXPECT_GT(small, 2200u);
  EXPECT_LT(small, 2800u);
}

TEST(RandomLifetimesTest, SameSpecSameTensors) {
  RandomLifetimeSpec spec;
  spec.tensors = 100;
  const auto first = random_lifetimes(spec);
  const auto again = random_lifetimes(spec);
  spec.seed = 2;
  const auto other = random_lifetimes(spec);
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].bytes, again[i].bytes);
    EXPECT_EQ(first[i].first_op, again[i].first_op);
    EXPECT_EQ(first[i].last_op, again[i].last_op);
  }
  std::size_t same = 0;
  for (std::size_t i = 0; i < first.size(); ++i) same += first[i].bytes == other[i].bytes ? 1 : 0;
  EXPECT_LT(same, 10u);
}

TEST(RandomLifetimesTest, ZeroMeanLengthGivesOneOpLifetimes) {
  RandomLifetimeSpec spec;
  spec.tensors = 50;
  spec.mean_length = 0;
  for (const TensorLifetime& tensor : random_lifetimes(spec)) {
    EXPECT_EQ(tensor.first_op, tensor.last_op);
  }
}

TEST(RandomLifetimesTest, RejectsABadSpec) {
  RandomLifetimeSpec no_ops;
  no_ops.ops = 0;
  EXPECT_THROW(random_lifetimes(no_ops), ConfigError);
  RandomLifetimeSpec inverted;
  inverted.min_bytes = 10;
  inverted.max_bytes = 5;
  EXPECT_THROW(random_lifetimes(inverted), ConfigError);
  RandomLifetimeSpec zero_min;
  zero_min.min_bytes = 0;
  EXPECT_THROW(random_lifetimes(zero_min), ConfigError);
  RandomLifetimeSpec negative;
  negative.mean_length = -1;
  EXPECT_THROW(random_lifetimes(negative), ConfigError);
}

}  // namespace
}  // namespace npumem::plan
