#include "npumem/allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

using testing::Backend;
using testing::expect_consistent;
using testing::TestDevice;

// Every test runs on the virtual NPU and on acl:0 over the test double of libascendcl.so.
class AllocatorOn : public ::testing::TestWithParam<Backend> {
 protected:
  TestDevice make(const SimSpec& spec) const { return TestDevice(GetParam(), spec); }
  std::shared_ptr<Device> npu(std::uint64_t hbm, std::uint64_t ddr) const {
    SimSpec spec;
    spec.hbm_bytes = hbm;
    spec.ddr_bytes = ddr;
    return make(spec).device();
  }
};

TEST_P(AllocatorOn, RoundsToGranuleAndCountsRequestedBytes) {
  Allocator allocator(npu(1 * GiB, 0));
  void* p = allocator.allocate(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 512, 0u);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.current, 1024);
  EXPECT_EQ(stats.requested_bytes.all.current, 1000);
  EXPECT_EQ(stats.allocated_bytes.by_kind[static_cast<int>(PoolKind::small)].current, 1024);
  EXPECT_EQ(stats.reserved_bytes.all.current, 2 * static_cast<std::int64_t>(MiB));
  EXPECT_EQ(allocator.allocation_size(p), 1000u);
  allocator.deallocate(p);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.freed, 1024);
}

TEST_P(AllocatorOn, GranuleOf256WorksToo) {
  Config config;
  config.granule = 256;
  Allocator allocator(npu(1 * GiB, 0), config);
  void* p = allocator.allocate(300);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 512);
  void* q = allocator.allocate(200);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 768);
  allocator.deallocate(p);
  allocator.deallocate(q);
}

TEST_P(AllocatorOn, SmallAndLargeRequestsUseSeparateSegments) {
  Allocator allocator(npu(1 * GiB, 0));
  void* small = allocator.allocate(4096);
  void* large = allocator.allocate(4 * MiB);
  const auto segments = allocator.snapshot();
  ASSERT_EQ(segments.size(), 2u);
  for (const SegmentInfo& s : segments) {
    const auto address = reinterpret_cast<std::uint64_t>(s.kind == PoolKind::small ? small : large);
    EXPECT_GE(address, s.address);
    EXPECT_LT(address, s.address + s.size);
  }
  allocator.deallocate(small);
  allocator.deallocate(large);
}

TEST_P(AllocatorOn, ReusesCachedBlocksWithoutDeviceCalls) {
  SimSpec spec;
  spec.ddr_bytes = 0;
  const TestDevice device = make(spec);
  Allocator allocator(device.device());
  void* p = allocator.allocate(8 * MiB);
  allocator.deallocate(p);
  DeviceCallCounts before;
  if (!device.call_counts(&before)) GTEST_SKIP() << "no call counts on a real NPU";
  void* q = allocator.allocate(8 * MiB);
  EXPECT_EQ(q, p);
  DeviceCallCounts after;
  ASSERT_TRUE(device.call_counts(&after));
  EXPECT_EQ(after.segment_allocs, before.segment_allocs);
  allocator.deallocate(q);
}

TEST_P(AllocatorOn, SplitsAndCoalesces) {
  Allocator allocator(npu(1 * GiB, 0));
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocator.allocate(2 * MiB));
  ASSERT_EQ(allocator.snapshot().size(), 1u);  // one 20 MiB segment split four ways
  allocator.deallocate(blocks[1]);
  allocator.deallocate(blocks[2]);
  auto segments = allocator.snapshot();
  ASSERT_EQ(segments[0].blocks.size(), 4u);  // a, [b+c], d, tail
  EXPECT_EQ(segments[0].blocks[1].size, 4 * MiB);
  allocator.deallocate(blocks[0]);
  allocator.deallocate(blocks[3]);
  segments = allocator.snapshot();
  ASSERT_EQ(segments[0].blocks.size(), 1u);
  EXPECT_EQ(segments[0].blocks[0].size, 20 * MiB);
}

TEST_P(AllocatorOn, SpillsToDdrWhenHbmIsFull) {
  Allocator allocator(npu(64 * MiB, 256 * MiB));
  void* a = allocator.allocate(48 * MiB);
  void* b = allocator.allocate(48 * MiB);
  EXPECT_EQ(allocator.tier_of(a), Tier::hbm);
  EXPECT_EQ(allocator.tier_of(b), Tier::ddr);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.num_spills, 1);
  EXPECT_EQ(stats.allocated_bytes.by_tier[static_cast<int>(Tier::ddr)].current,
            static_cast<std::int64_t>(48 * MiB));
  allocator.deallocate(b);  // returns to the DDR tier's pool
  EXPECT_EQ(allocator.stats().allocated_bytes.by_tier[static_cast<int>(Tier::ddr)].current, 0);
  allocator.deallocate(a);
}

TEST_P(AllocatorOn, ReclaimsHbmCacheBeforeSpilling) {
  Allocator allocator(npu(64 * MiB, 256 * MiB));
  void* a = allocator.allocate(40 * MiB);
  allocator.deallocate(a);  // 40 MiB cached on HBM, too small for what comes next
  void* b = allocator.allocate(60 * MiB);
  EXPECT_EQ(allocator.tier_of(b), Tier::hbm);
  EXPECT_EQ(allocator.stats().num_spills, 0);
  allocator.deallocate(b);
}

// Every release of cached segments made to serve a request counts as a reclaim:
// the high-water release before growing and the garbage-collection threshold too.
TEST_P(AllocatorOn, EveryReleaseUnderPressureCountsAsAReclaim) {
  Allocator allocator(npu(1 * GiB, 0));
  void* a = allocator.allocate(40 * MiB);
  allocator.deallocate(a);  // cached; the next request is larger and raises the high water
  void* b = allocator.allocate(60 * MiB);
  const Stats high_water = allocator.stats();
  EXPECT_EQ(high_water.num_device_free, 1);
  EXPECT_EQ(high_water.num_reclaims, 1);
  allocator.deallocate(b);

  Config config;
  config.garbage_collection_threshold = 0.05;
  Allocator collecting(npu(1 * GiB, 0), config);
  void* c = collecting.allocate(30 * MiB);
  collecting.deallocate(c);
  void* d = collecting.allocate(30 * MiB + 1);  // past 5 % of 1 GiB: the cache goes first
  EXPECT_EQ(collecting.stats().num_device_free, collecting.stats().num_reclaims);
  EXPECT_GE(collecting.stats().num_reclaims, 1);
  collecting.deallocate(d);
}

// PyTorch counts an allocation that had to free cached memory to fit within the device
// in num_alloc_retries; npumem frees it before growing past the high water, so that
// release counts as a retry when the growth would not have fit without it. A release
// that only keeps the footprint low (room to spare) is a reclaim, not a retry.
TEST_P(AllocatorOn, AReleaseThatMadeRoomForTheRequestCountsAsARetry) {
  {
    Allocator allocator(npu(100 * MiB, 0));
    void* a = allocator.allocate(60 * MiB);
    allocator.deallocate(a);  // 60 MiB cached, too small; 60 + 70 would pass 100
    void* b = allocator.allocate(70 * MiB);
    EXPECT_EQ(allocator.stats().num_reclaims, 1);
    EXPECT_EQ(allocator.stats().num_alloc_retries, 1);
    allocator.deallocate(b);
  }
  Allocator roomy(npu(1 * GiB, 0));
  void* c = roomy.allocate(40 * MiB);
  roomy.deallocate(c);
  void* d = roomy.allocate(60 * MiB);
  EXPECT_EQ(roomy.stats().num_reclaims, 1);
  EXPECT_EQ(roomy.stats().num_alloc_retries, 0);
  roomy.deallocate(d);
}

// A request more than the tier may ever hold fails without releasing the cache: no
// release could serve it (a cold trial saw a 1 TiB request empty a 64 MiB cache).
TEST_P(AllocatorOn, ARequestNoTierCanHoldLeavesTheCacheAlone) {
  Allocator allocator(npu(1 * GiB, 0));
  allocator.deallocate(allocator.allocate(64 * MiB));
  const Stats before = allocator.stats();
  EXPECT_THROW(allocator.allocate(std::size_t{1} << 40), OutOfMemory);
  const Stats after = allocator.stats();
  EXPECT_EQ(after.reserved_bytes.all.current, before.reserved_bytes.all.current);
  EXPECT_EQ(after.num_device_free, before.num_device_free);
  EXPECT_EQ(after.num_reclaims, before.num_reclaims);
  allocator.create_pool("capped", 32 * MiB);
  PoolScope scope(allocator, "capped");
  EXPECT_THROW(allocator.allocate(48 * MiB), OutOfMemory);  // past its quota alone
  EXPECT_EQ(allocator.stats().num_reclaims, before.num_reclaims);
}

TEST_P(AllocatorOn, SpillingCanBeDisabled) {
  Config config;
  config.spill_to_ddr = false;
  Allocator allocator(npu(64 * MiB, 256 * MiB), config);
  void* a = allocator.allocate(48 * MiB);
  EXPECT_THROW(allocator.allocate(48 * MiB), OutOfMemory);
  allocator.deallocate(a);
}

TEST_P(AllocatorOn, OutOfMemoryExplainsItself) {
  Allocator allocator(npu(64 * MiB, 32 * MiB));
  void* a = allocator.allocate(40 * MiB);
  try {
    allocator.allocate(50 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.requested_bytes(), 50 * MiB);
    EXPECT_EQ(e.pool(), "default");
    EXPECT_NE(message.find("50.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("hbm"), std::string::npos) << message;
    EXPECT_NE(message.find("ddr"), std::string::npos) << message;
    EXPECT_NE(message.find("capacity"), std::string::npos) << message;
    EXPECT_NE(message.find("64.0 MiB"), std::string::npos) << message;
    EXPECT_NE(message.find("largest free"), std::string::npos) << message;
    EXPECT_NE(message.find("fragmentation"), std::string::npos) << message;
    EXPECT_NE(message.find("Advice:"), std::string::npos) << message;
  }
  EXPECT_EQ(allocator.stats().num_ooms, 1);
  allocator.deallocate(a);
}

TEST_P(AllocatorOn, OutOfMemoryAdvisesOnFragmentation) {
  Config config;
  config.large_segment = 32 * MiB;
  config.large_segment_threshold = 32 * MiB;
  Allocator allocator(npu(64 * MiB, 0), config);
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(allocator.allocate(4 * MiB));
  for (int i = 0; i < 16; i += 2) allocator.deallocate(blocks[i]);  // 32 MiB free in 4 MiB holes
  try {
    allocator.allocate(16 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("fragmented"), std::string::npos) << e.what();
  }
  EXPECT_GT(allocator.fragmentation(Tier::hbm), 0.8);
  for (int i = 1; i < 16; i += 2) allocator.deallocate(blocks[i]);
}

TEST_P(AllocatorOn, DoubleFreeIsDetectedAndChangesNothing) {
  Allocator allocator(npu(1 * GiB, 0));
  void* p = allocator.allocate(4096);
  void* q = allocator.allocate(4096);
  allocator.deallocate(p);
  // The check returns the blocks the thread's front cache keeps to the pools (so p
  // reads as free), which moves them into inactive_split; so does a snapshot.
  allocator.snapshot();
  const auto before = allocator.stats().as_map();
  try {
    allocator.deallocate(p);
    FAIL() << "expected InvalidPointer";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("double free"), std::string::npos) << e.what();
  }
  EXPECT_EQ(allocator.stats().as_map(), before);
  expect_consistent(allocator, {{q, 4096}});
  allocator.deallocate(q);
}

// A block freed merges with its free neighbour before it: freed again, its pointer lies
// inside the merged block, and was named "inside a block; pass the pointer allocate()
// returned", which it was.
TEST_P(AllocatorOn, DoubleFreeAfterAMergeIsNamedADoubleFree) {
  Allocator allocator(npu(1 * GiB, 0));
  void* p = allocator.allocate(3 * MiB);
  void* q = allocator.allocate(4 * MiB);
  void* last = allocator.allocate(2 * MiB);
  allocator.deallocate(q);
  allocator.deallocate(p);
  allocator.snapshot();
  const auto before = allocator.stats().as_map();
  try {
    allocator.deallocate(q);
    FAIL() << "expected InvalidPointer";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("double free: pointer 0x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is free: freed already, or never returned by allocate()"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(allocator.stats().as_map(), before);
  expect_consistent(allocator, {{last, 2 * MiB}});
  allocator.deallocate(last);
}

TEST_P(AllocatorOn, ForeignAndInteriorPointersAreRejected) {
  Allocator allocator(npu(1 * GiB, 0));
  int on_stack = 0;
  void* p = allocator.allocate(4096);
  EXPECT_THROW(allocator.deallocate(&on_stack), InvalidPointer);
  try {
    allocator.deallocate(static_cast<char*>(p) + 512);
    FAIL() << "expected InvalidPointer";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("inside a block"), std::string::npos) << e.what();
  }
  EXPECT_THROW(allocator.deallocate(nullptr), InvalidPointer);
  EXPECT_THROW(allocator.tier_of(&on_stack), InvalidPointer);
  // Where the rest of p's segment begins, free and never handed out: "double free" alone
  // named a free that never happened.
  try {
    allocator.deallocate(static_cast<char*>(p) + 4096);
    FAIL() << "expected InvalidPointer";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("freed already, or never returned by allocate()"),
              std::string::npos)
        << e.what();
  }
  expect_consistent(allocator, {{p, 4096}});
  allocator.deallocate(p);
}

TEST_P(AllocatorOn, EmptyCacheReleasesFreeSegmentsOnly) {
  auto device = npu(1 * GiB, 0);
  Allocator allocator(device);
  void* keep = allocator.allocate(30 * MiB);
  void* drop = allocator.allocate(40 * MiB);
  allocator.deallocate(drop);
  EXPECT_EQ(allocator.empty_cache(), 40 * MiB);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(30 * MiB));
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 30 * MiB);
  EXPECT_EQ(allocator.stats().num_device_free, 1);
  allocator.deallocate(keep);
}

TEST_P(AllocatorOn, ResetPeakKeepsCurrent) {
  Allocator allocator(npu(1 * GiB, 0));
  void* a = allocator.allocate(8 * MiB);
  void* b = allocator.allocate(8 * MiB);
  allocator.deallocate(b);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.peak, static_cast<std::int64_t>(16 * MiB));
  allocator.reset_peak_stats();
  EXPECT_EQ(allocator.stats().allocated_bytes.all.peak, static_cast<std::int64_t>(8 * MiB));
  // The peaks since the start stay: a job's report must not lose what its code reset.
  const Stats since_start = allocator.stats_since_start();
  EXPECT_EQ(since_start.allocated_bytes.all.peak, static_cast<std::int64_t>(16 * MiB));
  EXPECT_EQ(since_start.allocated_bytes.all.current, static_cast<std::int64_t>(8 * MiB));
  void* c = allocator.allocate(12 * MiB);  // past the reset peak, below the first
  allocator.reset_peak_stats();
  EXPECT_EQ(allocator.stats_since_start().allocated_bytes.all.peak,
            static_cast<std::int64_t>(20 * MiB));
  allocator.deallocate(c);
  allocator.deallocate(a);
}

TEST_P(AllocatorOn, MaxSplitSizeKeepsLargeBlocksWhole) {
  for (const bool limit_splits : {false, true}) {
    Config config;
    if (limit_splits) config.max_split_size = 48 * MiB;
    Allocator allocator(npu(1 * GiB, 0), config);
    allocator.deallocate(allocator.allocate(200 * MiB));  // raise the high-water mark
    allocator.empty_cache();
    void* big = allocator.allocate(64 * MiB);
    allocator.deallocate(big);
    void* small = allocator.allocate(4 * MiB);
    EXPECT_EQ(small == big, !limit_splits) << "max_split_size set: " << limit_splits;
    allocator.deallocate(small);
  }
}

// A request just below max_split_size gets a segment rounded up past it: the segment
// made for it serves it. Expandable ranges and the static arena are single segments that
// are split by design: the setting does not stop them serving small requests.
TEST_P(AllocatorOn, MaxSplitSizeNeverRefusesWhatFits) {
  Config caching;
  caching.max_split_size = 64 * MiB;
  {
    Allocator allocator(npu(1 * GiB, 0), caching);
    void* p = allocator.allocate(65096704);  // 62.1 MiB: a 64 MiB segment
    EXPECT_EQ(allocator.allocation_size(p), 65096704u);
    allocator.deallocate(p);
  }
  Config expandable = caching;
  expandable.strategy = Strategy::expandable;
  Config arena = caching;
  arena.strategy = Strategy::static_arena;
  arena.static_size = 512 * MiB;
  for (const Config& config : {expandable, arena}) {
    Allocator allocator(npu(1 * GiB, 0), config);
    void* big = allocator.allocate(300 * MiB);
    allocator.deallocate(big);  // a free block past max_split_size
    void* small = allocator.allocate(257);
    EXPECT_NE(small, nullptr) << strategy_name(config.strategy);
    allocator.deallocate(small);
  }
}

TEST_P(AllocatorOn, InjectedDeviceFaultsEndInRetryOrCleanOom) {
  if (!testing::controls_available(GetParam()))
    GTEST_SKIP() << "needs the test double's injected faults";
  SimSpec spec;
  spec.hbm_bytes = 512 * MiB;
  spec.ddr_bytes = 512 * MiB;
  spec.faults.probability = 0.3;
  spec.faults.seed = 5;
  const TestDevice test_device = make(spec);
  const std::shared_ptr<Device> device = test_device.device();
  std::mt19937_64 rng(3);
  std::map<void*, std::size_t> live;
  int ooms = 0;
  {
    Allocator allocator(device);
    for (int step = 0; step < 2000; ++step) {
      if (!live.empty() && rng() % 2 == 0) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        allocator.deallocate(it->first);
        live.erase(it);
      } else {
        const std::size_t bytes = 1 + rng() % (24 * MiB);
        try {
          live[allocator.allocate(bytes)] = bytes;
        } catch (const OutOfMemory&) {
          ++ooms;
        }
      }
    }
    expect_consistent(allocator, live);
    EXPECT_EQ(allocator.stats().num_ooms, ooms);
    for (const auto& [p, bytes] : live) allocator.deallocate(p);
    allocator.empty_cache();
    EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
  }
  DeviceCallCounts calls;
  if (test_device.call_counts(&calls)) {
    EXPECT_GT(calls.injected_failures, 0u);
  }
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 0u);  // nothing leaked
  EXPECT_EQ(device->tier_info(Tier::ddr).used_bytes, 0u);
}

TEST_P(AllocatorOn, EveryNthSegmentFailureIsRetriedOnDdr) {
  if (!testing::controls_available(GetParam()))
    GTEST_SKIP() << "needs the test double's injected faults";
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 1 * GiB;
  spec.faults.every = 2;
  Allocator allocator(make(spec).device());
  void* a = allocator.allocate(30 * MiB);  // call 1: ok on HBM
  void* b = allocator.allocate(30 * MiB);  // call 2 fails on HBM, call 3 succeeds on DDR
  EXPECT_EQ(allocator.tier_of(a), Tier::hbm);
  EXPECT_EQ(allocator.tier_of(b), Tier::ddr);
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST_P(AllocatorOn, DestructorReturnsEverySegment) {
  auto device = npu(1 * GiB, 1 * GiB);
  {
    Allocator allocator(device);
    allocator.allocate(5 * MiB);
    allocator.allocate(100);
  }
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST_P(AllocatorOn, ZeroByteAllocationsAreUnique) {
  Allocator allocator(npu(1 * GiB, 0));
  void* a = allocator.allocate(0);
  void* b = allocator.allocate(0);
  EXPECT_NE(a, b);
  EXPECT_EQ(allocator.allocation_size(a), 0u);
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST_P(AllocatorOn, HostBackedMemoryIsWritable) {
  SimSpec spec;
  spec.hbm_bytes = 256 * MiB;
  spec.ddr_bytes = 0;
  spec.backing = Backing::host;
  const std::shared_ptr<Device> device = make(spec).device();
  Allocator allocator(device);
  void* bytes = allocator.allocate(3 * MiB);
  testing::fill(*device, bytes, 7, 3 * MiB);
  EXPECT_TRUE(testing::holds(*device, bytes, 7, 3 * MiB));
  allocator.deallocate(bytes);
}

class KindRecorder : public AllocatorObserver {
 public:
  void on_event(const Event& event) override { kinds.push_back(event.kind); }
  std::vector<EventKind> kinds;
};

TEST_P(AllocatorOn, MarkIterationReachesObserversInEventOrder) {
  Allocator allocator(npu(1 * GiB, 0));
  auto recorder = std::make_shared<KindRecorder>();
  allocator.add_observer(recorder);
  allocator.mark_iteration();
  void* p = allocator.allocate(4096);
  allocator.mark_iteration();
  allocator.deallocate(p);
  const std::vector<EventKind> expected{EventKind::iteration, EventKind::alloc,
                                        EventKind::iteration, EventKind::free};
  std::vector<EventKind> seen;
  for (const EventKind kind : recorder->kinds) {
    if (kind != EventKind::segment_alloc) seen.push_back(kind);
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(event_kind_name(EventKind::iteration), "iteration");
}

INSTANTIATE_TEST_SUITE_P(Devices, AllocatorOn, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

// Expandable on a limit that is not whole granules: the advice counts granules, not the
// device (it said "the device refused the memory" for 4.5 MiB live and 2 MiB on 7 MiB).
TEST(AllocatorOom, AGranuleShortOfTheLimitIsNamed) {
  Allocator allocator(make_device("sim:hbm=7MiB,ddr=0"), parse_config("strategy:expandable"));
  void* live = allocator.allocate(9 * MiB / 2);
  try {
    allocator.allocate(2 * MiB);
    FAIL() << "3 granules of 2 MiB cannot hold 6.5 MiB";
  } catch (const OutOfMemory& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("holds 3 granules of 2.00 MiB (expandable_large_granule)"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("device refused"), std::string::npos) << text;
  }
  allocator.deallocate(live);
}

// A device that refuses a call (a fault, a driver failure) is named as the cause; the
// advice does not send the user to expandable segments for fragmentation there is none of.
TEST(AllocatorOom, ADeviceFaultIsNamedNotTakenForFragmentation) {
  Allocator allocator(make_device("sim:hbm=256MiB,ddr=0,fail_every=2"));
  void* small = allocator.allocate(4 * KiB);  // the first device call succeeds
  try {
    allocator.allocate(30 * MiB);
    FAIL() << "the injected fault was not met";
  } catch (const OutOfMemory& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("device: a fault injected by the device spec"), std::string::npos) << text;
    EXPECT_NE(text.find("the device refused the memory"), std::string::npos) << text;
    EXPECT_EQ(text.find("expandable_segments"), std::string::npos) << text;
  }
  allocator.deallocate(small);
}

}  // namespace
}  // namespace npumem
