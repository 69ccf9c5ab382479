// Inactive-split changes kept apart (deferred_splits.h) publish the statistics that
// writing each operation through gives: current values, peaks, allocated and freed.
#include "core/pool/deferred_splits.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "core/pool/block_pool.h"

namespace npumem::core {
namespace {

constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();

TEST(SplitChange, PeakIsTheHighestRunningSumAnOperationEndedAt) {
  Stats stats;
  stats.inactive_split_bytes.increase(PoolKind::large, Tier::hbm, 100);
  stats.inactive_split_bytes.decrease(PoolKind::large, Tier::hbm, 60);  // current 40, peak 100
  SplitChange change;
  change.add(50);   // 90
  change.add(-80);  // 10
  change.add(70);   // 80
  change.publish_to(stats.inactive_split_bytes, PoolKind::large, Tier::hbm);
  for (const Stat& stat : {stats.inactive_split_bytes.all, stats.inactive_split_bytes.by_kind[1],
                           stats.inactive_split_bytes.by_tier[0]}) {
    EXPECT_EQ(stat.current, 80);
    EXPECT_EQ(stat.peak, 100);
    EXPECT_EQ(stat.allocated, 220);
    EXPECT_EQ(stat.freed, 140);
  }
  change = {};
  change.add(50);  // 130: a new peak
  change.publish_to(stats.inactive_split_bytes, PoolKind::large, Tier::hbm);
  EXPECT_EQ(stats.inactive_split_bytes.all.peak, 130);
  EXPECT_EQ(stats.inactive_split_bytes.by_kind[0].current, 0);  // the other kind untouched
}

// Two block pools (the small and large kind) sharing the statistics, once with their
// changes kept apart and once written through, under the same random traffic.
struct TwoKinds {
  explicit TwoKinds(DeferredSplits* deferred)
      : small(Tier::hbm, PoolKind::small, nullptr, &stats, deferred),
        large(Tier::hbm, PoolKind::large, nullptr, &stats, deferred) {
    small.add_segment(0x10000000, 1 << 21);
    large.add_segment(0x20000000, 1 << 24);
  }
  Stats stats;
  BlockPool small;
  BlockPool large;
  std::vector<Block*> live;
};

TEST(DeferredSplits, PublishedStatisticsEqualThoseWrittenThrough) {
  DeferredSplits deferred;
  TwoKinds apart(&deferred);
  TwoKinds through(nullptr);
  std::mt19937_64 random(11);
  for (int step = 0; step < 4000; ++step) {
    const bool large = random() % 2 == 0;
    const std::size_t size = 512 * (1 + random() % (large ? 2048 : 64));
    if (apart.live.size() < 24 && random() % 3 != 0) {
      for (TwoKinds* pools : {&apart, &through}) {
        Block* block = (large ? pools->large : pools->small).take(size, kAny, 512, kAny);
        if (block != nullptr) pools->live.push_back(block);
      }
      ASSERT_EQ(apart.live.size(), through.live.size());
    } else if (!apart.live.empty()) {
      const std::size_t victim = random() % apart.live.size();
      for (TwoKinds* pools : {&apart, &through}) {
        Block* block = pools->live[victim];
        (block->segment->kind == PoolKind::large ? pools->large : pools->small).release(block);
        pools->live.erase(pools->live.begin() + static_cast<long>(victim));
      }
    }
    if (step % 97 == 0) {
      deferred.publish();
      ASSERT_EQ(apart.stats.as_map(), through.stats.as_map()) << "at step " << step;
    }
  }
  deferred.publish();
  EXPECT_EQ(apart.stats.as_map(), through.stats.as_map());
  EXPECT_GT(through.stats.inactive_split.all.peak, 1);
}

TEST(DeferredSplits, ABlockPoolPublishesItsChangesWhenDestroyed) {
  DeferredSplits deferred;
  Stats stats;
  {
    BlockPool pool(Tier::ddr, PoolKind::large, nullptr, &stats, &deferred);
    pool.add_segment(0x40000000, 1 << 20);
    Block* block = pool.take(4096, kAny, 512, kAny);  // leaves a free tail: one split
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(stats.inactive_split.all.current, 0);  // kept apart
  }
  EXPECT_EQ(stats.inactive_split.all.peak, 1);
  EXPECT_EQ(stats.inactive_split.by_tier[1].allocated, 1);
  deferred.publish();  // nothing left to publish, and no dangling holder
  EXPECT_EQ(stats.inactive_split.all.current, 0);
}

}  // namespace
}  // namespace npumem::core
