#include <gtest/gtest.h>

#include "npumem/snapshot.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(MemorySnapshot, HoldsDeviceStatsPoolsAndSegmentsWithBlocks) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=32MiB"));
  allocator.create_pool("kv");
  void* p = nullptr;
  {
    ScopedMemoryTag tag("embedding");
    p = allocator.allocate(1000);
  }
  const MemorySnapshot snapshot = memory_snapshot(allocator);
  EXPECT_EQ(snapshot.device_name, "sim:0");
  EXPECT_TRUE(snapshot.tiers[0].present);
  EXPECT_EQ(snapshot.tiers[0].capacity_bytes, 64 * MiB);
  EXPECT_EQ(snapshot.tiers[1].capacity_bytes, 32 * MiB);
  EXPECT_EQ(snapshot.config, to_string(allocator.config()));
  EXPECT_GT(snapshot.time_unix_ns, 0);
  EXPECT_EQ(snapshot.stats.allocated_bytes.all.current, 1024);
  ASSERT_EQ(snapshot.pools.size(), 2u);
  EXPECT_EQ(snapshot.pools[1].name, "kv");
  ASSERT_EQ(snapshot.segments.size(), 1u);
  const SegmentInfo& segment = snapshot.segments[0];
  EXPECT_EQ(segment.tier, Tier::hbm);
  EXPECT_EQ(segment.pool, "default");
  ASSERT_EQ(segment.blocks.size(), 2u);
  EXPECT_EQ(segment.blocks[0].address, reinterpret_cast<std::uint64_t>(p));
  EXPECT_TRUE(segment.blocks[0].allocated);
  EXPECT_EQ(segment.blocks[0].requested_bytes, 1000u);
  EXPECT_EQ(segment.blocks[0].tag, "embedding");
  EXPECT_FALSE(segment.blocks[1].allocated);
  EXPECT_FALSE(snapshot.history.recorded);
  allocator.deallocate(p);
}

TEST(MemorySnapshot, CarriesTheRecordedHistory) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator, {.max_entries = 2});
  allocator.deallocate(allocator.allocate(1000));
  const MemorySnapshot snapshot = memory_snapshot(allocator, recorder.get());
  EXPECT_TRUE(snapshot.history.recorded);
  EXPECT_EQ(snapshot.history.max_entries, 2u);
  EXPECT_EQ(snapshot.history.dropped, 1u);  // the segment allocation
  ASSERT_EQ(snapshot.history.entries.size(), 2u);
  EXPECT_EQ(snapshot.history.entries[0].kind, EventKind::alloc);
  EXPECT_EQ(snapshot.history.start_unix_ns, recorder->start_unix_ns());
}

}  // namespace
}  // namespace npumem
