#include "observe/watch/usage.h"

#include <gtest/gtest.h>

namespace npumem::observe {
namespace {

TEST(Usage, ReadsCurrentAndPeakPerTierAndInAll) {
  Stats stats;
  stats.allocated_bytes.increase(PoolKind::large, Tier::hbm, 300);
  stats.allocated_bytes.decrease(PoolKind::large, Tier::hbm, 100);
  stats.allocated_bytes.increase(PoolKind::small, Tier::ddr, 50);
  stats.reserved_bytes.increase(PoolKind::large, Tier::hbm, 1000);
  const TierUsage hbm = tier_usage(stats, Tier::hbm);
  EXPECT_EQ(hbm.allocated_bytes, 200u);
  EXPECT_EQ(hbm.peak_allocated_bytes, 300u);
  EXPECT_EQ(hbm.reserved_bytes, 1000u);
  EXPECT_EQ(tier_usage(stats, Tier::ddr).allocated_bytes, 50u);
  const TierUsage all = total_usage(stats);
  EXPECT_EQ(all.allocated_bytes, 250u);
  EXPECT_EQ(all.peak_allocated_bytes, 300u);
  EXPECT_EQ(all.peak_reserved_bytes, 1000u);
}

}  // namespace
}  // namespace npumem::observe
