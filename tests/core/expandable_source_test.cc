#include "core/expandable_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "device/sim_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

Config expandable(std::uint64_t large_granule = 20 * MiB) {
  Config config;
  config.strategy = Strategy::expandable;
  config.expandable_large_granule = large_granule;
  return config;
}

std::shared_ptr<SimDevice> device(Backing backing = Backing::none, std::uint64_t hbm = 1 * GiB,
                                  std::uint64_t ddr = 0) {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = ddr;
  spec.backing = backing;
  return std::make_shared<SimDevice>(spec);
}

std::int64_t reserved(const Allocator& allocator) {
  return allocator.stats().reserved_bytes.all.current;
}

TEST(Expandable, GrowsByGranulesInOneRange) {
  auto sim = device();
  Allocator allocator(sim, expandable());
  void* a = allocator.allocate(30 * MiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(40 * MiB));  // two 20 MiB granules
  void* b = allocator.allocate(5 * MiB);  // fits in the rest of the mapped memory
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(40 * MiB));
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(30 * MiB));
  EXPECT_EQ(allocator.stats().segment.all.current, 1);
  EXPECT_EQ(sim->call_counts().creates, 2u);
  EXPECT_EQ(sim->call_counts().segment_allocs, 0u);
  testing::expect_consistent(allocator, {{a, 30 * MiB}, {b, 5 * MiB}});
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST(Expandable, GrowthUsesTheFreeTailBeforeMappingNewGranules) {
  auto sim = device();
  Allocator allocator(sim, expandable());
  void* a = allocator.allocate(30 * MiB);  // two granules, 10 MiB free behind a
  void* b = allocator.allocate(25 * MiB);  // the free 10 MiB and one new granule
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(60 * MiB));
  EXPECT_EQ(sim->call_counts().creates, 3u);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(30 * MiB));
  testing::expect_consistent(allocator, {{a, 30 * MiB}, {b, 25 * MiB}});
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST(Expandable, ReclaimUnmapsWholeFreeGranulesOnly) {
  auto sim = device();
  Allocator allocator(sim, expandable());
  void* a = allocator.allocate(30 * MiB);
  void* b = allocator.allocate(35 * MiB);  // [a 30][b 35] over four granules
  allocator.deallocate(a);
  // Granule 0 lies wholly in a's free block; granule 1 is shared with b.
  EXPECT_EQ(allocator.empty_cache(), 20 * MiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(60 * MiB));
  EXPECT_EQ(sim->tier_info(Tier::hbm).used_bytes, 60 * MiB);
  testing::expect_consistent(allocator, {{b, 35 * MiB}});
  allocator.deallocate(b);
  allocator.empty_cache();
  EXPECT_EQ(reserved(allocator), 0);
  EXPECT_EQ(sim->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST(Expandable, AddressesAndDataSurviveGrowth) {
  Allocator allocator(device(Backing::host, 512 * MiB), expandable(2 * MiB));
  auto* first = static_cast<unsigned char*>(allocator.allocate(3 * MiB));
  std::memset(first, 0xAB, 3 * MiB);
  std::vector<void*> more;
  for (int i = 0; i < 20; ++i) more.push_back(allocator.allocate(4 * MiB));
  for (std::size_t i = 0; i < 3 * MiB; i += 4096) ASSERT_EQ(first[i], 0xAB);
  for (void* p : more) allocator.deallocate(p);
  allocator.empty_cache();  // unmaps the free granules past `first`
  for (std::size_t i = 0; i < 3 * MiB; i += 4096) ASSERT_EQ(first[i], 0xAB);
  allocator.deallocate(first);
}

// Free memory scattered in holes is stitched into one block instead of growing.
TEST(Expandable, StitchesFreeGranulesForALargeRequest) {
  auto sim = device(Backing::host, 512 * MiB);
  Allocator allocator(sim, expandable(2 * MiB));
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(allocator.allocate(4 * MiB));
  for (int i = 0; i < 16; i += 2) allocator.deallocate(blocks[i]);  // 8 holes of 4 MiB
  const std::int64_t before = reserved(allocator);
  auto* big = static_cast<unsigned char*>(allocator.allocate(24 * MiB));
  EXPECT_EQ(reserved(allocator), before);  // no new physical memory
  std::memset(big, 0x5A, 24 * MiB);        // all of it is real, writable memory
  std::map<void*, std::size_t> live{{big, 24 * MiB}};
  for (int i = 1; i < 16; i += 2) {
    static_cast<unsigned char*>(blocks[i])[0] = 1;  // the others are untouched
    live[blocks[i]] = 4 * MiB;
  }
  testing::expect_consistent(allocator, live);
  for (const auto& [p, bytes] : live) allocator.deallocate(p);
  EXPECT_GT(sim->call_counts().unmaps, 0u);
}

TEST(Expandable, FailedMapPartWayLeavesTheAllocatorUsable) {
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 0;
  auto sim = std::make_shared<SimDevice>(spec);
  Allocator allocator(sim, expandable(2 * MiB));
  void* keep = allocator.allocate(2 * MiB);
  FaultSpec faults;
  faults.every = 3;
  faults.ops = static_cast<std::uint8_t>(FaultOp::map);
  sim->set_faults(faults);
  EXPECT_THROW(allocator.allocate(20 * MiB), OutOfMemory);  // the third map fails
  sim->set_faults({});
  testing::expect_consistent(allocator, {{keep, 2 * MiB}});
  void* big = allocator.allocate(20 * MiB);
  testing::expect_consistent(allocator, {{keep, 2 * MiB}, {big, 20 * MiB}});
  allocator.deallocate(big);
  allocator.deallocate(keep);
  allocator.empty_cache();
  EXPECT_EQ(sim->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST(Expandable, FailedCreatePartWayReleasesWhatItGathered) {
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 0;
  auto sim = std::make_shared<SimDevice>(spec);
  Allocator allocator(sim, expandable(2 * MiB));
  FaultSpec faults;
  faults.every = 4;
  faults.ops = static_cast<std::uint8_t>(FaultOp::create);
  sim->set_faults(faults);
  EXPECT_THROW(allocator.allocate(10 * MiB), OutOfMemory);
  EXPECT_EQ(reserved(allocator), 0);
  EXPECT_EQ(sim->tier_info(Tier::hbm).used_bytes, 0u);
  sim->set_faults({});
  void* p = allocator.allocate(10 * MiB);
  testing::expect_consistent(allocator, {{p, 10 * MiB}});
  allocator.deallocate(p);
}

TEST(Expandable, DeviceWithoutVirtualMemoryFallsBackToCachingWithAWarning) {
  SimSpec spec;
  spec.virtual_memory = false;
  Allocator allocator(std::make_shared<SimDevice>(spec), expandable());
  EXPECT_EQ(allocator.config().strategy, Strategy::caching);
  ASSERT_EQ(allocator.warnings().size(), 1u);
  EXPECT_NE(allocator.warnings()[0].find("not supported"), std::string::npos);
  void* p = allocator.allocate(30 * MiB);
  allocator.deallocate(p);
}

TEST(Expandable, TheOutOfMemoryMessageNamesTheStrategy) {
  Allocator allocator(device(Backing::none, 64 * MiB), expandable(2 * MiB));
  try {
    allocator.allocate(100 * MiB);
    FAIL();
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("expandable"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npumem
