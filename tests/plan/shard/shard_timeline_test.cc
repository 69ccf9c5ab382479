#include <gtest/gtest.h>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

// Weights 100, 200, 300, 400 B; outputs 10, 20, 30, 40 B; input 5 B; compute 1, 2, 3, 4 s;
// loads at 100 B/s.
const std::vector<Layer> kLayers{
    {"l0", 100, 10, 1.0}, {"l1", 200, 20, 2.0}, {"l2", 300, 30, 3.0}, {"l3", 400, 40, 4.0}};

ShardOptions options(std::uint64_t budget) {
  ShardOptions result;
  result.hbm_budget_bytes = budget;
  result.load_bytes_per_s = 100.0;
  result.timing.input_bytes = 5;
  return result;
}

TEST(ShardTimelineTest, PrefetchesTheNextShardWhileOneComputes) {
  const std::vector<std::size_t> starts{0, 2, 3};
  const ShardPlan plan = simulate_shards(kLayers, starts, options(1000));
  ASSERT_EQ(plan.shards.size(), 3u);
  // Shard 0 [l0, l1]: load 0-3, compute 3-6. Shard 1 [l2]: load 3-6, compute 6-9.
  // Shard 2 [l3]: its buffer frees at 6 (shard 0 done): load 6-10, compute 10-14.
  const Shard& first = plan.shards[0];
  EXPECT_EQ(first.first_layer, 0u);
  EXPECT_EQ(first.end_layer, 2u);
  EXPECT_EQ(first.weight_bytes, 300u);
  EXPECT_EQ(first.activation_bytes, 30u);
  EXPECT_EQ(first.peak_bytes, 630u);  // with shard 1's weights
  EXPECT_TRUE(first.prefetches_next);
  EXPECT_DOUBLE_EQ(first.compute_start, 3.0);
  EXPECT_DOUBLE_EQ(first.stall_seconds, 3.0);
  EXPECT_DOUBLE_EQ(plan.shards[1].load_start, 3.0);
  EXPECT_DOUBLE_EQ(plan.shards[1].compute_start, 6.0);
  EXPECT_DOUBLE_EQ(plan.shards[1].stall_seconds, 0.0);
  EXPECT_EQ(plan.shards[1].peak_bytes, 750u);
  EXPECT_DOUBLE_EQ(plan.shards[2].load_start, 6.0);
  EXPECT_DOUBLE_EQ(plan.shards[2].compute_start, 10.0);
  EXPECT_DOUBLE_EQ(plan.shards[2].stall_seconds, 1.0);
  EXPECT_FALSE(plan.shards[2].prefetches_next);
  EXPECT_EQ(plan.shards[2].peak_bytes, 470u);
  EXPECT_DOUBLE_EQ(plan.total_seconds, 14.0);
  EXPECT_DOUBLE_EQ(plan.compute_seconds, 10.0);
  EXPECT_DOUBLE_EQ(plan.load_seconds, 10.0);
  EXPECT_DOUBLE_EQ(plan.stall_seconds, 4.0);
}

TEST(ShardTimelineTest, LoadsAfterwardsWhenTheNextShardDoesNotFitBeside) {
  // Shard 1 (350 B) plus shard 2's weights (400 B) exceed 700 B.
  const std::vector<std::size_t> starts{0, 2, 3};
  const ShardPlan plan = simulate_shards(kLayers, starts, options(700));
  EXPECT_TRUE(plan.shards[0].prefetches_next);
  EXPECT_FALSE(plan.shards[1].prefetches_next);
  EXPECT_EQ(plan.shards[1].peak_bytes, 350u);
  EXPECT_DOUBLE_EQ(plan.shards[2].load_start, 9.0);
  EXPECT_DOUBLE_EQ(plan.shards[2].compute_start, 13.0);
  EXPECT_DOUBLE_EQ(plan.total_seconds, 17.0);
}

TEST(ShardTimelineTest, OneShardLoadsThenComputes) {
  const std::vector<std::size_t> starts{0};
  const ShardPlan plan = simulate_shards(kLayers, starts, options(2000));
  EXPECT_DOUBLE_EQ(plan.total_seconds, 20.0);  // load 10 + compute 10
  EXPECT_DOUBLE_EQ(plan.stall_seconds, 10.0);
}

TEST(ShardTimelineTest, RejectsBadStartsAndShardsThatDoNotFit) {
  EXPECT_THROW(simulate_shards(kLayers, std::vector<std::size_t>{}, options(2000)), ConfigError);
  EXPECT_THROW(simulate_shards(kLayers, std::vector<std::size_t>{1}, options(2000)), ConfigError);
  EXPECT_THROW(simulate_shards(kLayers, std::vector<std::size_t>{0, 2, 2}, options(2000)),
               ConfigError);
  EXPECT_THROW(simulate_shards(kLayers, std::vector<std::size_t>{0, 4}, options(2000)),
               ConfigError);
  EXPECT_THROW(simulate_shards(kLayers, std::vector<std::size_t>{0, 3}, options(600)), OutOfMemory);
  EXPECT_EQ(simulate_shards({}, std::vector<std::size_t>{}, options(0)).total_seconds, 0.0);
}

TEST(ShardTimelineTest, FewestShardsPacksGreedily) {
  // Budget 700: [l0 l1 l2] needs 650, adding l3 needs 1070; l3 alone 470.
  EXPECT_EQ(fewest_shard_starts(kLayers, options(700)), (std::vector<std::size_t>{0, 3}));
  // Budget 400: 115, 230+... [l0 l1] 330, [l2] 350, l3 470 does not fit.
  EXPECT_THROW(fewest_shard_starts(kLayers, options(400)), OutOfMemory);
  EXPECT_EQ(fewest_shard_starts(kLayers, options(470)), (std::vector<std::size_t>{0, 2, 3}));
}

}  // namespace
}  // namespace npumem::plan
