#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <thread>
#include <vector>

#include "npumem/errors.h"
#include "npumem/history.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::vector<EventKind> kinds_of(const std::vector<HistoryEntry>& entries) {
  std::vector<EventKind> kinds;
  for (const HistoryEntry& entry : entries) kinds.push_back(entry.kind);
  return kinds;
}

TEST(HistoryRecorder, RecordsEventsInOrderWithSizesTierPoolAndTag) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator);
  void* p = nullptr;
  {
    ScopedMemoryTag tag("attention");
    p = allocator.allocate(3000);
  }
  allocator.deallocate(p);

  const auto entries = recorder->entries();
  ASSERT_EQ(kinds_of(entries),
            (std::vector<EventKind>{EventKind::segment_alloc, EventKind::alloc, EventKind::free}));
  const HistoryEntry& alloc = entries[1];
  EXPECT_EQ(alloc.sequence, 1u);
  EXPECT_EQ(alloc.address, reinterpret_cast<std::uint64_t>(p));
  EXPECT_EQ(alloc.bytes, 3072u);
  EXPECT_EQ(alloc.requested_bytes, 3000u);
  EXPECT_EQ(alloc.tier, Tier::hbm);
  EXPECT_EQ(alloc.pool, "default");
  EXPECT_EQ(alloc.tag, "attention");
  EXPECT_EQ(alloc.tier_allocated_bytes, 3072u);
  EXPECT_EQ(alloc.tier_reserved_bytes, 2 * MiB);
  EXPECT_EQ(entries[0].tier_allocated_bytes, 0u);
  EXPECT_EQ(entries[2].tier_allocated_bytes, 0u);
  EXPECT_EQ(entries[2].tag, "attention");  // a free carries its block's tag
  EXPECT_LE(entries[0].time_ns, entries[2].time_ns);
  EXPECT_TRUE(alloc.frames.empty());
  EXPECT_EQ(recorder->recorded(), 3u);
  EXPECT_EQ(recorder->dropped(), 0u);
}

TEST(HistoryRecorder, RingKeepsTheNewestEntries) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  void* warm = allocator.allocate(1024);  // the segment exists before recording
  auto recorder = record_history(allocator, {.max_entries = 4});
  for (int i = 0; i < 5; ++i) allocator.deallocate(allocator.allocate(512));
  const auto entries = recorder->entries();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(recorder->recorded(), 10u);
  EXPECT_EQ(recorder->dropped(), 6u);
  EXPECT_EQ(entries.front().sequence, 6u);
  EXPECT_EQ(entries.back().sequence, 9u);
  EXPECT_EQ(kinds_of(entries), (std::vector<EventKind>{EventKind::alloc, EventKind::free,
                                                       EventKind::alloc, EventKind::free}));
  // Totals start from the allocator's state when recording began.
  EXPECT_EQ(entries[0].tier_allocated_bytes, 1536u);
  EXPECT_EQ(entries[1].tier_allocated_bytes, 1024u);
  allocator.deallocate(warm);
}

TEST(HistoryRecorder, RecordsSpillsReclaimsAndOoms) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=64MiB"));
  allocator.create_pool("other");
  auto recorder = record_history(allocator);
  {
    PoolScope scope(allocator, "other");
    allocator.deallocate(allocator.allocate(40 * MiB));  // stays cached in "other"
  }
  void* held = allocator.allocate(30 * MiB);  // HBM is full: reclaims "other"'s cache
  void* spilled = nullptr;
  {
    ScopedMemoryTag tag("decoder.3");        // spills and OOMs carry the tag, as allocations do
    spilled = allocator.allocate(50 * MiB);  // no room in HBM: DDR
    EXPECT_THROW(allocator.allocate(1024 * MiB), OutOfMemory);
  }
  const auto entries = recorder->entries();
  const auto kinds = kinds_of(entries);
  for (const EventKind kind : {EventKind::reclaim, EventKind::spill, EventKind::oom}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << event_kind_name(kind);
  }
  EXPECT_EQ(entries.back().kind, EventKind::oom);
  EXPECT_EQ(entries.back().requested_bytes, 1024 * MiB);
  EXPECT_EQ(entries.back().tag, "decoder.3");
  const auto spill = std::find(kinds.begin(), kinds.end(), EventKind::spill) - kinds.begin();
  EXPECT_EQ(entries[static_cast<std::size_t>(spill)].tag, "decoder.3");
  allocator.deallocate(held);
  allocator.deallocate(spilled);
}

TEST(HistoryRecorder, TierTotalsFollowTheStatsWithEveryStrategy) {
  for (const Strategy strategy : {Strategy::caching, Strategy::expandable}) {
    Config config;
    config.strategy = strategy;
    Allocator allocator(make_device("sim:hbm=256MiB,ddr=0"), config);
    auto recorder = record_history(allocator);
    std::vector<void*> live;
    for (const std::size_t bytes :
         std::initializer_list<std::size_t>{1000, 3 * MiB, 30 * MiB, 200 * KiB, 50 * MiB}) {
      live.push_back(allocator.allocate(bytes));
    }
    allocator.deallocate(live[2]);
    allocator.deallocate(live[4]);
    allocator.empty_cache();
    const Stats stats = allocator.stats();
    const HistoryEntry last = recorder->entries().back();
    EXPECT_EQ(static_cast<std::int64_t>(last.tier_allocated_bytes),
              stats.allocated_bytes.by_tier[0].current)
        << strategy_name(strategy);
    EXPECT_EQ(static_cast<std::int64_t>(last.tier_reserved_bytes),
              stats.reserved_bytes.by_tier[0].current)
        << strategy_name(strategy);
    for (void* p : {live[0], live[1], live[3]}) allocator.deallocate(p);
  }
}

TEST(HistoryRecorder, CapturesBacktracesWhenAsked) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder =
      record_history(allocator, {.max_entries = 16, .backtraces = true, .max_frames = 4});
  allocator.deallocate(allocator.allocate(512));
  for (const HistoryEntry& entry : recorder->entries()) {
    EXPECT_GT(entry.frames.size(), 0u);
    EXPECT_LE(entry.frames.size(), 4u);
  }
}

TEST(HistoryRecorder, StopsWhenRemoved) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator);
  allocator.remove_observer(recorder);
  allocator.deallocate(allocator.allocate(512));
  EXPECT_EQ(recorder->recorded(), 0u);
}

TEST(HistoryRecorder, ReadersSeeConsecutiveEntriesWhileThreadsAllocate) {
  Allocator allocator(make_device("sim:hbm=256MiB,ddr=0"));
  void* warm = allocator.allocate(512);  // the small segment exists before recording
  auto recorder = record_history(allocator, {.max_entries = 256});
  constexpr int kPairs = 2000;
  std::vector<std::thread> threads;
  for (const char* tag : {"left", "right"}) {
    threads.emplace_back([&allocator, tag] {
      ScopedMemoryTag scoped(tag);
      for (int i = 0; i < kPairs; ++i) allocator.deallocate(allocator.allocate(1000));
    });
  }
  for (int read = 0; read < 50; ++read) {
    const auto entries = recorder->entries();
    for (std::size_t i = 1; i < entries.size(); ++i) {
      ASSERT_EQ(entries[i].sequence, entries[i - 1].sequence + 1);
    }
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(recorder->recorded(), 2u * 2 * kPairs);
  const HistoryEntry last = recorder->entries().back();
  EXPECT_EQ(last.kind, EventKind::free);
  EXPECT_EQ(last.tier_allocated_bytes, 512u);
  allocator.deallocate(warm);
}

TEST(HistoryRecorder, RejectsAnEmptyRing) {
  EXPECT_THROW(HistoryRecorder({.max_entries = 0}), ConfigError);
  EXPECT_THROW(HistoryRecorder({.max_entries = 8, .backtraces = true, .max_frames = 65}),
               ConfigError);
  EXPECT_THROW(HistoryRecorder({.max_entries = std::size_t{1} << 62}), ConfigError);
}

TEST(HistoryRecorder, AGenerousRingCostsNothingUpFront) {
  // A billion entries with backtraces would be over 100 GiB if taken up front.
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator, {.max_entries = 1'000'000'000, .backtraces = true});
  for (int i = 0; i < 3; ++i) allocator.deallocate(allocator.allocate(512));
  EXPECT_EQ(recorder->entries().size(), 7u);  // a segment, then three allocs and frees
  EXPECT_EQ(recorder->dropped(), 0u);
}

}  // namespace
}  // namespace npumem
