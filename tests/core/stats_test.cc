#include "npumem/stats.h"

#include <gtest/gtest.h>

#include <limits>

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
        "num_device_alloc", "num_device_free", "num_spills", "num_reclaims",
        "inactive_split.large_pool.peak", "inactive_split_bytes.all.freed",
        "oversize_allocations.current", "oversize_segments.allocated"}) {
    EXPECT_EQ(map.count(key), 1u) << key;
  }
  EXPECT_EQ(map.at("max_split_size"), -1);
  EXPECT_EQ(map.count("oversize_allocations.all.current"), 0u) << "PyTorch's keys have no split";
}

// A copy modelled at a bandwidth of 1 B/s takes 10^12 s: past 2^63 ns the figure is
// capped, not wrapped negative (a cold trial read -9223372036854775808).
TEST(Stats, ModelledCopyTimeCapsRatherThanWraps) {
  Stats stats;
  stats.copies[0][1].add(std::uint64_t{1} << 40, 1.1e12);
  EXPECT_EQ(stats.as_map().at("copy_modelled_ns.hbm_to_ddr"),
            std::numeric_limits<std::int64_t>::max());
  stats.copies[1][0].add(1024, 2.5e-6);
  EXPECT_EQ(stats.as_map().at("copy_modelled_ns.ddr_to_hbm"), 2500);
}

TEST(Stats, ResetAccumulatedKeepsCurrentAndPeak) {
  Stats stats;
  stats.allocated_bytes.increase(PoolKind::small, Tier::hbm, 300);
  stats.allocated_bytes.decrease(PoolKind::small, Tier::hbm, 100);
  stats.oversize_segments.increase(2);
  stats.num_ooms = 3;
  stats.num_spills = 1;
  stats.reset_accumulated();
  for (const Stat& stat :
       {stats.allocated_bytes.all, stats.allocated_bytes.by_kind[static_cast<int>(PoolKind::small)],
        stats.allocated_bytes.by_tier[static_cast<int>(Tier::hbm)]}) {
    EXPECT_EQ(stat.allocated, 0);
    EXPECT_EQ(stat.freed, 0);
    EXPECT_EQ(stat.current, 200);
    EXPECT_EQ(stat.peak, 300);
  }
  EXPECT_EQ(stats.oversize_segments.allocated, 0);
  EXPECT_EQ(stats.oversize_segments.current, 2);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_spills, 0);
}

}  // namespace
}  // namespace npumem
