#include "npumem/stats.h"

#include <gtest/gtest.h>

namespace npumem {
namespace {

TEST(Stat, TracksCurrentPeakAndTotals) {
  Stat s;
  s.increase(10);
  s.increase(5);
  s.decrease(12);
  EXPECT_EQ(s.current, 3);
  EXPECT_EQ(s.peak, 15);
  EXPECT_EQ(s.allocated, 15);
  EXPECT_EQ(s.freed, 12);
  s.reset_peak();
  EXPECT_EQ(s.peak, 3);
}

TEST(Stats, MapUsesPyTorchKeysPlusTiers) {
  Stats stats;
  stats.allocated_bytes.increase(PoolKind::large, Tier::ddr, 4096);
  stats.num_ooms = 2;
  const auto map = stats.as_map();
  EXPECT_EQ(map.at("allocated_bytes.all.current"), 4096);
  EXPECT_EQ(map.at("allocated_bytes.large_pool.peak"), 4096);
  EXPECT_EQ(map.at("allocated_bytes.small_pool.current"), 0);
  EXPECT_EQ(map.at("allocated_bytes.ddr.allocated"), 4096);
  EXPECT_EQ(map.at("allocated_bytes.hbm.current"), 0);
  EXPECT_EQ(map.at("num_ooms"), 2);
  for (const char* key :
       {"reserved_bytes.all.freed", "active_bytes.all.current", "requested_bytes.all.current",
        "allocation.all.current", "segment.all.current", "active.all.current", "num_alloc_retries",
        "num_device_alloc", "num_device_free", "num_spills", "num_reclaims"}) {
    EXPECT_EQ(map.count(key), 1u) << key;
  }
}

}  // namespace
}  // namespace npumem
