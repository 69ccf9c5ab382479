#include "core/strategy/expandable_source.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "acl/test_device.h"
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

using testing::Backend;
using testing::fill;
using testing::holds;
using testing::TestDevice;

// Every test runs on the virtual NPU and on acl:0 over the test double of libascendcl.so.
class Expandable : public ::testing::TestWithParam<Backend> {
 protected:
  TestDevice device(Backing backing = Backing::none, std::uint64_t hbm = 1 * GiB,
                    std::uint64_t ddr = 0) const {
    SimSpec spec;
    spec.hbm_bytes = hbm;
    spec.ddr_bytes = ddr;
    spec.backing = backing;
    return TestDevice(GetParam(), spec);
  }
};

DeviceCallCounts counts_of(const TestDevice& device) {
  DeviceCallCounts counts;
  if (!device.call_counts(&counts)) ADD_FAILURE() << "no call counts on this device";
  return counts;
}

std::int64_t reserved(const Allocator& allocator) {
  return allocator.stats().reserved_bytes.all.current;
}

TEST_P(Expandable, GrowsByGranulesInOneRange) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device();
  Allocator allocator(sim.device(), expandable());
  void* a = allocator.allocate(30 * MiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(40 * MiB));  // two 20 MiB granules
  void* b = allocator.allocate(5 * MiB);  // fits in the rest of the mapped memory
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(40 * MiB));
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(30 * MiB));
  EXPECT_EQ(allocator.stats().segment.all.current, 1);
  EXPECT_EQ(counts_of(sim).creates, 2u);
  EXPECT_EQ(counts_of(sim).segment_allocs, 0u);
  testing::expect_consistent(allocator, {{a, 30 * MiB}, {b, 5 * MiB}});
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST_P(Expandable, GrowthUsesTheFreeTailBeforeMappingNewGranules) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device();
  Allocator allocator(sim.device(), expandable());
  void* a = allocator.allocate(30 * MiB);  // two granules, 10 MiB free behind a
  void* b = allocator.allocate(25 * MiB);  // the free 10 MiB and one new granule
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(60 * MiB));
  EXPECT_EQ(counts_of(sim).creates, 3u);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(30 * MiB));
  testing::expect_consistent(allocator, {{a, 30 * MiB}, {b, 25 * MiB}});
  allocator.deallocate(a);
  allocator.deallocate(b);
}

// The free block after an unmapped stretch counts too: mapping the stretch's back
// joins it, where a fresh stretch would need every granule of the request.
TEST_P(Expandable, GrowthUsesTheFreeBlockAfterAnUnmappedStretch) {
  const std::shared_ptr<Device> npu = device().device();
  Allocator allocator(npu, expandable(2 * MiB));
  void* a = allocator.allocate(5 * MiB);  // granules 0-2, 1 MiB free after a
  void* b = allocator.allocate(1 * MiB);  // that free MiB
  void* c = allocator.allocate(2 * MiB);  // granule 3
  allocator.deallocate(a);
  EXPECT_EQ(allocator.empty_cache(), 4 * MiB);  // granules 0 and 1; 1 MiB of 2 stays free
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(4 * MiB));
  void* d = allocator.allocate(5 * MiB);  // two granules before the free MiB
  EXPECT_EQ(d, a);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(8 * MiB));
  testing::expect_consistent(allocator, {{b, 1 * MiB}, {c, 2 * MiB}, {d, 5 * MiB}});
  for (void* p : {b, c, d}) allocator.deallocate(p);
}

// By default both kinds share one range of 2 MiB granules: a small block fills the
// rest of a large block's last granule instead of mapping a granule of its own.
TEST_P(Expandable, DefaultsPutSmallBlocksInTheLargeBlocksGranules) {
  Config config;
  config.strategy = Strategy::expandable;
  Allocator allocator(device().device(), config);
  void* large = allocator.allocate(3 * MiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(4 * MiB));
  void* small = allocator.allocate(512 * KiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(static_cast<char*>(small) - static_cast<char*>(large),
            static_cast<std::ptrdiff_t>(3 * MiB));
  EXPECT_EQ(allocator.stats().segment.all.current, 1);
  testing::expect_consistent(allocator, {{large, 3 * MiB}, {small, 512 * KiB}});
  allocator.deallocate(small);
  allocator.deallocate(large);
}

// A range with nothing mapped after a release is given back, address space and all
// (as PyTorch releases a wholly free expandable segment): after empty_cache, 0 bytes
// reserved read as 0 segments, not 1. The next request reserves a range again.
TEST_P(Expandable, EmptyCacheGivesBackARangeWithNothingMapped) {
  Config config = expandable(4 * MiB);
  config.expandable_small_granule = 2 * MiB;  // two granules: a range for each kind
  config.small_size = 1 * MiB;
  const TestDevice npu = device();
  Allocator allocator(npu.device(), config);
  const auto segments = [&] { return allocator.stats().segment.all.current; };
  void* large = allocator.allocate(3 * MiB);
  void* small = allocator.allocate(512 * KiB);
  EXPECT_EQ(segments(), 2);
  allocator.deallocate(small);
  EXPECT_EQ(allocator.empty_cache(), 2 * MiB);
  EXPECT_EQ(segments(), 1) << "the small range had nothing mapped left";
  testing::expect_consistent(allocator, {{large, 3 * MiB}});
  allocator.deallocate(large);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
  EXPECT_EQ(segments(), 0);
  EXPECT_TRUE(allocator.snapshot().empty());
  void* again = allocator.allocate(3 * MiB);
  EXPECT_EQ(segments(), 1);
  testing::expect_consistent(allocator, {{again, 3 * MiB}});
  allocator.deallocate(again);
}

// Granules round up to the device's granularity: a small granule set below it is the
// large one, and the kinds then share one range as with the defaults.
TEST_P(Expandable, GranulesEqualOnceRoundedShareOneRange) {
  Config config;
  config.strategy = Strategy::expandable;
  config.expandable_small_granule = 64 * KiB;  // the device's granularity is 2 MiB
  Allocator allocator(device().device(), config);
  void* large = allocator.allocate(3 * MiB);
  void* small = allocator.allocate(512);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(allocator.stats().segment.all.current, 1);
  allocator.deallocate(small);
  allocator.deallocate(large);
}

TEST_P(Expandable, ReclaimUnmapsWholeFreeGranulesOnly) {
  const std::shared_ptr<Device> npu = device().device();
  Allocator allocator(npu, expandable());
  void* a = allocator.allocate(30 * MiB);
  void* b = allocator.allocate(35 * MiB);  // [a 30][b 35] over four granules
  allocator.deallocate(a);
  // Granule 0 lies wholly in a's free block; granule 1 is shared with b.
  EXPECT_EQ(allocator.empty_cache(), 20 * MiB);
  EXPECT_EQ(reserved(allocator), static_cast<std::int64_t>(60 * MiB));
  EXPECT_EQ(npu->tier_info(Tier::hbm).used_bytes, 60 * MiB);
  testing::expect_consistent(allocator, {{b, 35 * MiB}});
  allocator.deallocate(b);
  allocator.empty_cache();
  EXPECT_EQ(reserved(allocator), 0);
  EXPECT_EQ(npu->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST_P(Expandable, AddressesAndDataSurviveGrowth) {
  const std::shared_ptr<Device> npu = device(Backing::host, 512 * MiB).device();
  Allocator allocator(npu, expandable(2 * MiB));
  void* first = allocator.allocate(3 * MiB);
  fill(*npu, first, 0xAB, 3 * MiB);
  std::vector<void*> more;
  for (int i = 0; i < 20; ++i) more.push_back(allocator.allocate(4 * MiB));
  ASSERT_TRUE(holds(*npu, first, 0xAB, 3 * MiB));
  for (void* p : more) allocator.deallocate(p);
  allocator.empty_cache();  // unmaps the free granules past `first`
  ASSERT_TRUE(holds(*npu, first, 0xAB, 3 * MiB));
  allocator.deallocate(first);
}

// Free memory scattered in holes is stitched into one block instead of growing.
TEST_P(Expandable, StitchesFreeGranulesForALargeRequest) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device(Backing::host, 512 * MiB);
  const std::shared_ptr<Device> npu = sim.device();
  Allocator allocator(npu, expandable(2 * MiB));
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(allocator.allocate(4 * MiB));
  for (int i = 0; i < 16; i += 2) allocator.deallocate(blocks[i]);  // 8 holes of 4 MiB
  const std::int64_t before = reserved(allocator);
  void* big = allocator.allocate(24 * MiB);
  EXPECT_EQ(reserved(allocator), before);  // no new physical memory
  fill(*npu, big, 0x5A, 24 * MiB);         // all of it is real, writable memory
  EXPECT_TRUE(holds(*npu, big, 0x5A, 24 * MiB));
  std::map<void*, std::size_t> live{{big, 24 * MiB}};
  for (int i = 1; i < 16; i += 2) {
    fill(*npu, blocks[i], 1, 1);  // the others are untouched
    live[blocks[i]] = 4 * MiB;
  }
  testing::expect_consistent(allocator, live);
  for (const auto& [p, bytes] : live) allocator.deallocate(p);
  EXPECT_GT(counts_of(sim).unmaps, 0u);
}

TEST_P(Expandable, FailedMapPartWayLeavesTheAllocatorUsable) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device(Backing::none, 1 * GiB);
  Allocator allocator(sim.device(), expandable(2 * MiB));
  void* keep = allocator.allocate(2 * MiB);
  FaultSpec faults;
  faults.every = 3;
  faults.ops = static_cast<std::uint8_t>(FaultOp::map);
  ASSERT_TRUE(sim.set_faults(faults));
  EXPECT_THROW(allocator.allocate(20 * MiB), OutOfMemory);  // the third map fails
  sim.set_faults({});
  testing::expect_consistent(allocator, {{keep, 2 * MiB}});
  void* big = allocator.allocate(20 * MiB);
  testing::expect_consistent(allocator, {{keep, 2 * MiB}, {big, 20 * MiB}});
  allocator.deallocate(big);
  allocator.deallocate(keep);
  allocator.empty_cache();
  EXPECT_EQ(sim.device()->tier_info(Tier::hbm).used_bytes, 0u);
}

// Every map refused: the ranges reserved for the requests hold nothing, and
// empty_cache gives them back (a cold trial read 2 segments of 0 bytes it could not free).
TEST_P(Expandable, RangesLeftEmptyByFailedMapsAreGivenBack) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device(Backing::none, 1 * GiB);
  Config config = expandable(2 * MiB);
  config.expandable_small_granule = 2 * MiB;
  config.expandable_large_granule = 4 * MiB;  // a range for each kind
  Allocator allocator(sim.device(), config);
  FaultSpec faults;
  faults.every = 1;
  faults.ops = static_cast<std::uint8_t>(FaultOp::map);
  ASSERT_TRUE(sim.set_faults(faults));
  EXPECT_THROW(allocator.allocate(8 * MiB), OutOfMemory);
  EXPECT_THROW(allocator.allocate(512), OutOfMemory);
  EXPECT_EQ(reserved(allocator), 0);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().segment.all.current, 0);
  EXPECT_TRUE(allocator.snapshot().empty());
  sim.set_faults({});
  void* p = allocator.allocate(8 * MiB);
  testing::expect_consistent(allocator, {{p, 8 * MiB}});
  allocator.deallocate(p);
}

TEST_P(Expandable, FailedCreatePartWayReleasesWhatItGathered) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device(Backing::none, 1 * GiB);
  Allocator allocator(sim.device(), expandable(2 * MiB));
  FaultSpec faults;
  faults.every = 4;
  faults.ops = static_cast<std::uint8_t>(FaultOp::create);
  ASSERT_TRUE(sim.set_faults(faults));
  EXPECT_THROW(allocator.allocate(10 * MiB), OutOfMemory);
  EXPECT_EQ(reserved(allocator), 0);
  EXPECT_EQ(sim.device()->tier_info(Tier::hbm).used_bytes, 0u);
  sim.set_faults({});
  void* p = allocator.allocate(10 * MiB);
  testing::expect_consistent(allocator, {{p, 10 * MiB}});
  allocator.deallocate(p);
}

// Growing granule by granule, such a request would fill HBM before failing: HBM's
// reserved peak and the device calls would both count memory never used.
TEST_P(Expandable, ARequestPastTheTierGoesToDdrWithoutMappingHbm) {
  if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs the test double's controls";
  const TestDevice sim = device(Backing::none, 64 * MiB, 1 * GiB);
  Allocator allocator(sim.device(), expandable(2 * MiB));
  void* big = allocator.allocate(100 * MiB);
  EXPECT_EQ(allocator.stats().reserved_bytes.by_tier[static_cast<int>(Tier::hbm)].peak, 0);
  EXPECT_EQ(allocator.stats().reserved_bytes.by_tier[static_cast<int>(Tier::ddr)].current,
            static_cast<std::int64_t>(100 * MiB));
  EXPECT_EQ(counts_of(sim).creates, 50u);  // DDR's granules alone
  testing::expect_consistent(allocator, {{big, 100 * MiB}});
  allocator.deallocate(big);
}

TEST_P(Expandable, DeviceWithoutVirtualMemoryFallsBackToCachingWithAWarning) {
  SimSpec spec;
  spec.virtual_memory = false;
  Allocator allocator(TestDevice(GetParam(), spec).device(), expandable());
  EXPECT_EQ(allocator.config().strategy, Strategy::caching);
  ASSERT_EQ(allocator.warnings().size(), 1u);
  EXPECT_NE(allocator.warnings()[0].find("expandable_segments feature is not supported"),
            std::string::npos)
      << allocator.warnings()[0];
  void* p = allocator.allocate(30 * MiB);
  allocator.deallocate(p);
}

// The seeds' driver falls back to static allocation: so does a config with static_size,
// or one that names the fallback; naming it without an arena size is an error.
TEST_P(Expandable, FallbackFollowsExpandableFallback) {
  SimSpec spec;
  spec.virtual_memory = false;
  const std::shared_ptr<Device> npu = TestDevice(GetParam(), spec).device();
  Config with_arena = expandable();
  with_arena.static_size = 64 * MiB;
  {
    Allocator allocator(npu, with_arena);
    EXPECT_EQ(allocator.config().strategy, Strategy::static_arena);
    ASSERT_EQ(allocator.warnings().size(), 1u);
    EXPECT_NE(allocator.warnings()[0].find("falling back to the static strategy"),
              std::string::npos)
        << allocator.warnings()[0];
  }
  with_arena.expandable_fallback = ExpandableFallback::caching;
  EXPECT_EQ(Allocator(npu, with_arena).config().strategy, Strategy::caching);
  Config without_arena = expandable();
  without_arena.expandable_fallback = ExpandableFallback::static_arena;
  try {
    Allocator allocator(npu, without_arena);
    FAIL() << "static needs an arena size";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("expandable_fallback:static needs static_size"),
              std::string::npos)
        << error.what();
  }
}

TEST_P(Expandable, TheOutOfMemoryMessageNamesTheStrategy) {
  Allocator allocator(device(Backing::none, 64 * MiB).device(), expandable(2 * MiB));
  try {
    allocator.allocate(100 * MiB);
    FAIL();
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("expandable"), std::string::npos) << e.what();
  }
}

// A range reserves twice what it may map: a pool with a quota, twice its quota, not
// twice the tier (each pool's ranges at 2x 64 GiB used up the address space at 1022
// pools, and the advice spoke of fragmentation).
TEST(ExpandableRanges, APoolWithAQuotaReservesAddressesForItsQuota) {
  Allocator allocator(make_device("sim"), expandable());
  std::vector<void*> live;
  for (int k = 0; k < 1100; ++k) {
    const std::string name = "pool" + std::to_string(k);
    allocator.create_pool(name, 8 * MiB);
    const PoolScope scope(allocator, name);
    live.push_back(allocator.allocate(1000));
  }
  for (void* ptr : live) allocator.deallocate(ptr);
}

// On a small limit a range still reserves 1 GiB of addresses: twice an 11 MiB limit held
// no free stretch for a 4.9 MiB request beside 5.6 MiB mapped (live blocks spread over the
// 22 MiB), and the refusal was blamed on the device.
TEST(ExpandableRanges, ARangeOnASmallLimitStillReservesAGibibyteOfAddresses) {
  Allocator allocator(make_device("sim:hbm=11MiB,ddr=0"), expandable(2 * MiB));
  void* p = allocator.allocate(1 * MiB);
  const std::vector<SegmentInfo> segments = allocator.snapshot();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].size, 1 * GiB);
  allocator.deallocate(p);
}

// A growth the quota refuses maps nothing first: the peaks stay what tensors held (a
// trial's failed 3 MiB request read as 8 MiB of HBM and 2 MiB of DDR at peak).
TEST(ExpandableRanges, AGrowthTheQuotaRefusesRaisesNoPeak) {
  Allocator allocator(make_device("sim:hbm=1GiB,ddr=1GiB"), expandable(2 * MiB));
  allocator.create_pool("m", 8 * MiB);
  const PoolScope scope(allocator, "m");
  void* a = allocator.allocate(3 * MiB);
  void* b = allocator.allocate(3 * MiB);
  EXPECT_THROW(allocator.allocate(3 * MiB), OutOfMemory);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes.by_tier[0].peak, static_cast<std::int64_t>(6 * MiB));
  EXPECT_EQ(stats.reserved_bytes.by_tier[1].peak, 0);
  EXPECT_EQ(allocator.pools()[1].stats.reserved_bytes.all.peak, static_cast<std::int64_t>(6 * MiB));
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST(ExpandableRanges, AddressSpaceUsedUpIsNamedAsSuch) {
  Allocator allocator(make_device("sim"), expandable());
  std::vector<void*> live;
  try {
    for (int k = 0; k < 1100; ++k) {
      const std::string name = "pool" + std::to_string(k);
      allocator.create_pool(name);
      const PoolScope scope(allocator, name);
      live.push_back(allocator.allocate(1000));
    }
    ADD_FAILURE() << "1100 ranges of 128 GiB fit in the address space";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("virtual address space is used up"), std::string::npos)
        << error.what();
  }
  for (void* ptr : live) allocator.deallocate(ptr);
}

INSTANTIATE_TEST_SUITE_P(Devices, Expandable, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
