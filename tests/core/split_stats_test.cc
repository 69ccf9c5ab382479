// PyTorch's statistics of cached memory: inactive_split (free blocks that share their
// segment, so empty_cache cannot release them), oversize allocations and segments
// (max_split_size), and reset_accumulated_stats.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "device/sim/sim_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

constexpr auto kLarge = static_cast<int>(PoolKind::large);
constexpr auto kSmall = static_cast<int>(PoolKind::small);

std::shared_ptr<SimDevice> sim(std::uint64_t hbm) {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = 0;
  return std::make_shared<SimDevice>(spec);
}

std::int64_t mib(std::uint64_t count) {
  return static_cast<std::int64_t>(count * MiB);
}

// Statistics read right after a free count the freed block as the pools would hold it
// without front caches: a block a thread's cache keeps goes back to its pool first.
// Once a second thread has allocated, caches keep large blocks whole too.
TEST(SplitStats, InactiveSplitsReadAsWithoutFrontCaches) {
  for (const bool two_threads : {false, true}) {
    SCOPED_TRACE(two_threads ? "after a second thread" : "lone thread");
    Allocator allocator(sim(1 * GiB));
    if (two_threads) std::thread([&] { allocator.deallocate(allocator.allocate(1)); }).join();
    std::vector<void*> large;
    for (int i = 0; i < 4; ++i) large.push_back(allocator.allocate(2 * MiB));
    void* small = allocator.allocate(256 * KiB);
    void* small_after = allocator.allocate(256 * KiB);
    allocator.stats();
    allocator.deallocate(large[1]);  // between two allocated blocks
    allocator.deallocate(small);     // before an allocated block
    Stats stats = allocator.stats();
    // Large: large[1] and the 12 MiB tail; small: `small` and its segment's tail.
    EXPECT_EQ(stats.inactive_split.by_kind[kLarge].current, 2);
    EXPECT_EQ(stats.inactive_split_bytes.by_kind[kLarge].current, mib(14));
    EXPECT_EQ(stats.inactive_split.by_kind[kSmall].current, 2);
    EXPECT_EQ(stats.inactive_split_bytes.by_kind[kSmall].current,
              static_cast<std::int64_t>(2 * MiB - 256 * KiB));
    const std::vector<PoolInfo> pools = allocator.pools();
    EXPECT_EQ(pools.front().stats.inactive_split.all.current, 4);
    allocator.deallocate(large[3]);     // merges with the tail
    allocator.deallocate(small_after);  // the small segment is one free block again
    stats = allocator.stats();
    EXPECT_EQ(stats.inactive_split.all.current, 2);
    EXPECT_EQ(stats.inactive_split_bytes.all.current, mib(16));
    for (void* ptr : {large[0], large[2]}) allocator.deallocate(ptr);
    EXPECT_EQ(allocator.stats().inactive_split.all.current, 0);
  }
}

TEST(SplitStats, InactiveSplitCountsFreeBlocksSharingTheirSegment) {
  Allocator allocator(sim(1 * GiB));
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocator.allocate(2 * MiB));
  // One 20 MiB segment: four 2 MiB blocks and a free 12 MiB tail.
  Stats stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.current, 1);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, mib(12));
  allocator.deallocate(blocks[1]);
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.current, 2);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, mib(14));
  allocator.deallocate(blocks[2]);  // merges with blocks[1]: still two free blocks
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.current, 2);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, mib(16));
  EXPECT_EQ(stats.inactive_split.by_kind[kLarge].current, 2);
  EXPECT_EQ(stats.inactive_split.by_kind[kSmall].current, 0);
  allocator.deallocate(blocks[0]);  // 6 MiB free before blocks[3], 12 MiB after it
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.current, 2);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, mib(18));
  allocator.deallocate(blocks[3]);  // the segment is one free block again: releasable
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.current, 0);
  EXPECT_EQ(stats.inactive_split_bytes.all.current, 0);
  EXPECT_EQ(stats.inactive_split.all.peak, 2);
  EXPECT_EQ(stats.inactive_split_bytes.all.peak, mib(18));
  EXPECT_EQ(stats.inactive_split.all.allocated - stats.inactive_split.all.freed, 0);
  const auto map = stats.as_map();
  EXPECT_EQ(map.at("inactive_split.large_pool.peak"), 2);
  EXPECT_EQ(map.at("inactive_split_bytes.all.peak"), mib(18));
  EXPECT_EQ(map.count("inactive_split.small_pool.freed"), 1u);
}

// As PyTorch counts them: each allocation and free adds its net change once, so a take
// from a split block's tail (one inactive block out, a smaller one in) adds no block.
TEST(SplitStats, InactiveSplitAddsEachOperationsNetChange) {
  Allocator allocator(sim(1 * GiB));
  void* first = allocator.allocate(2 * MiB);   // a 20 MiB segment: a free 18 MiB tail
  void* second = allocator.allocate(2 * MiB);  // from that tail: 16 MiB left
  Stats stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.allocated, 1);
  EXPECT_EQ(stats.inactive_split.all.freed, 0);
  EXPECT_EQ(stats.inactive_split_bytes.all.allocated, mib(18));
  EXPECT_EQ(stats.inactive_split_bytes.all.freed, mib(2));
  allocator.deallocate(second);  // merges into the tail: 18 MiB again, still one block
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.allocated, 1);
  EXPECT_EQ(stats.inactive_split.all.freed, 0);
  EXPECT_EQ(stats.inactive_split_bytes.all.allocated, mib(20));
  EXPECT_EQ(stats.inactive_split_bytes.all.freed, mib(2));
  EXPECT_EQ(stats.inactive_split_bytes.all.peak, mib(18));
  allocator.deallocate(first);  // the segment is whole: no inactive split left
  stats = allocator.stats();
  EXPECT_EQ(stats.inactive_split.all.freed, 1);
  EXPECT_EQ(stats.inactive_split_bytes.all.freed, mib(20));
  EXPECT_EQ(stats.inactive_split_bytes.by_kind[kLarge].current, 0);
}

// While it is the only pool, the first pool's statistics are the totals; once a second
// pool exists both count their own inactive splits.
TEST(SplitStats, EachPoolCountsItsInactiveSplitsOnceThereAreTwo) {
  Allocator allocator(sim(1 * GiB));
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocator.allocate(2 * MiB));
  allocator.create_pool("other");
  allocator.deallocate(blocks[1]);  // the default pool: two free blocks, 14 MiB
  void* theirs = nullptr;
  {
    PoolScope scope(allocator, "other");
    theirs = allocator.allocate(2 * MiB);  // its own segment: one free 18 MiB tail
  }
  const auto pool_stats = [&](const std::string& name) {
    for (const PoolInfo& pool : allocator.pools()) {
      if (pool.name == name) return pool.stats;
    }
    ADD_FAILURE() << "no pool " << name;
    return Stats{};
  };
  Stats first = pool_stats("default");
  EXPECT_EQ(first.inactive_split.all.current, 2);
  EXPECT_EQ(first.inactive_split_bytes.all.current, mib(14));
  EXPECT_EQ(first.inactive_split.all.peak, 2);
  const Stats other = pool_stats("other");
  EXPECT_EQ(other.inactive_split.all.current, 1);
  EXPECT_EQ(other.inactive_split_bytes.all.current, mib(18));
  EXPECT_EQ(allocator.stats().inactive_split.all.current, 3);
  for (void* ptr : blocks) {
    if (ptr != blocks[1]) allocator.deallocate(ptr);
  }
  allocator.deallocate(theirs);
  first = pool_stats("default");
  EXPECT_EQ(first.inactive_split.all.current, 0);
  EXPECT_EQ(first.inactive_split_bytes.all.peak, mib(18));
  EXPECT_EQ(allocator.stats().inactive_split.all.current, 0);
}

TEST(SplitStats, InactiveSplitMatchesTheSnapshotUnderRandomTraffic) {
  Allocator allocator(sim(1 * GiB));
  std::map<void*, std::size_t> live;
  std::uint64_t state = 7;
  for (int step = 0; step < 2000; ++step) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    const std::size_t bytes = 256 + (state >> 33) % (6 * MiB);
    if (live.size() < 40 && (state >> 20) % 3 != 0) {
      live[allocator.allocate(bytes)] = bytes;
    } else if (!live.empty()) {
      auto victim = live.begin();
      std::advance(victim, static_cast<long>((state >> 40) % live.size()));
      allocator.deallocate(victim->first);
      live.erase(victim);
    }
    if (step % 100 == 0) testing::expect_consistent(allocator, live);
  }
  for (const auto& [ptr, bytes] : live) allocator.deallocate(ptr);
}

TEST(SplitStats, OversizeAllocationsAndSegmentsFollowMaxSplitSize) {
  Config config;
  config.max_split_size = 48 * MiB;
  Allocator allocator(sim(1 * GiB), config);
  void* big = allocator.allocate(64 * MiB);
  void* small = allocator.allocate(4 * MiB);
  Stats stats = allocator.stats();
  EXPECT_EQ(stats.oversize_allocations.current, 1);
  EXPECT_EQ(stats.oversize_segments.current, 1);  // the 64 MiB one, not the 20 MiB one
  EXPECT_EQ(stats.max_split_size, mib(48));
  allocator.deallocate(big);
  stats = allocator.stats();
  EXPECT_EQ(stats.oversize_allocations.current, 0);
  EXPECT_EQ(stats.oversize_allocations.peak, 1);
  EXPECT_EQ(stats.oversize_allocations.freed, 1);
  EXPECT_EQ(stats.oversize_segments.current, 1);  // cached
  allocator.empty_cache();
  stats = allocator.stats();
  EXPECT_EQ(stats.oversize_segments.current, 0);
  EXPECT_EQ(stats.oversize_segments.freed, 1);
  EXPECT_EQ(stats.as_map().at("oversize_segments.peak"), 1);
  EXPECT_EQ(stats.as_map().at("max_split_size"), mib(48));
  allocator.deallocate(small);
}

TEST(SplitStats, NothingIsOversizeWithoutMaxSplitSize) {
  Allocator allocator(sim(1 * GiB));
  allocator.deallocate(allocator.allocate(500 * MiB));
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.oversize_allocations.allocated, 0);
  EXPECT_EQ(stats.oversize_segments.allocated, 0);
  EXPECT_EQ(stats.as_map().at("max_split_size"), -1);
}

// Front caches serve freed blocks again without counting oversize allocations: they
// must never keep one.
TEST(SplitStats, OversizeAllocationsAreCountedWithSeveralThreads) {
  Config config;
  config.max_split_size = 32 * MiB;
  Allocator allocator(sim(1 * GiB), config);
  constexpr int kRounds = 50;
  auto churn = [&] {
    for (int i = 0; i < kRounds; ++i) allocator.deallocate(allocator.allocate(48 * MiB));
  };
  // This thread's cache first: however the two below interleave, theirs is a second
  // one, which works without the allocator's lock.
  allocator.deallocate(allocator.allocate(1));
  std::thread first(churn);
  std::thread second(churn);
  first.join();
  second.join();
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.oversize_allocations.allocated, 2 * kRounds);
  EXPECT_EQ(stats.oversize_allocations.freed, 2 * kRounds);
  EXPECT_EQ(stats.oversize_allocations.current, 0);
  EXPECT_EQ(stats.allocation.all.allocated, 2 * kRounds + 1);
}

TEST(SplitStats, ResetAccumulatedZeroesTotalsAndKeepsCurrentAndPeak) {
  Config config;
  config.spill_to_ddr = false;
  Allocator allocator(sim(64 * MiB), config);
  void* kept = allocator.allocate(8 * MiB);
  allocator.deallocate(allocator.allocate(8 * MiB));
  EXPECT_THROW(allocator.allocate(100 * MiB), OutOfMemory);
  const Stats before = allocator.stats();
  ASSERT_GT(before.allocated_bytes.all.freed, 0);
  ASSERT_EQ(before.num_ooms, 1);
  allocator.reset_accumulated_stats();
  Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.allocated, 0);
  EXPECT_EQ(stats.allocated_bytes.all.freed, 0);
  EXPECT_EQ(stats.allocation.by_kind[kLarge].allocated, 0);
  EXPECT_EQ(stats.reserved_bytes.all.allocated, 0);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
  EXPECT_EQ(stats.allocated_bytes.all.current, before.allocated_bytes.all.current);
  EXPECT_EQ(stats.allocated_bytes.all.peak, before.allocated_bytes.all.peak);
  EXPECT_EQ(stats.reserved_bytes.all.current, before.reserved_bytes.all.current);
  void* next = allocator.allocate(4 * MiB);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.allocated, mib(4));
  EXPECT_EQ(stats.allocation.all.allocated, 1);
  allocator.deallocate(next);
  allocator.deallocate(kept);
}

}  // namespace
}  // namespace npumem
