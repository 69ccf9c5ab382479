#include "core/pool/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

namespace npumem::core {
namespace {

constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();

TEST(BlockPool, SplitsTakesAndMergesBack) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x100000, 1 << 20);
  Block* a = pool.take(4096, kAny, 512, kAny);
  Block* b = pool.take(8192, kAny, 512, kAny);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->address, 0x100000u);
  EXPECT_EQ(b->address, 0x100000u + 4096);
  EXPECT_EQ(pool.free_bytes(), (1u << 20) - 4096 - 8192);
  pool.release(a);
  Block* merged = pool.release(b);
  EXPECT_EQ(merged->address, 0x100000u);
  EXPECT_EQ(merged->size, 1u << 20);
  EXPECT_EQ(pool.free_bytes(), 1u << 20);
}

// A thread's block record moved into memory of its own stays the same block to the pool:
// its neighbours and segment point to it, and it merges back when released.
TEST(BlockPool, MovesAnAllocatedBlocksRecordAndMergesItBack) {
  ObjectPool<Block> records;  // outlives the pool, whose blocks may keep its records
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  const Segment* segment = pool.add_segment(0x100000, 1 << 20);
  Block* first = pool.take(4096, kAny, 512, kAny);
  Block* middle = pool.take(8192, kAny, 512, kAny);
  Block* moved_first = pool.move_record(first, records);
  Block* moved_middle = pool.move_record(middle, records);
  ASSERT_NE(moved_first, first);
  EXPECT_EQ(segment->first, moved_first);
  EXPECT_EQ(moved_first->address, 0x100000u);
  EXPECT_TRUE(moved_first->allocated);
  EXPECT_EQ(moved_first->next, moved_middle);
  EXPECT_EQ(moved_middle->prev, moved_first);
  ASSERT_NE(moved_middle->next, nullptr);
  EXPECT_EQ(moved_middle->next->prev, moved_middle);
  EXPECT_EQ(moved_middle->size, 8192u);
  pool.release(moved_middle);
  Block* merged = pool.release(moved_first);
  EXPECT_EQ(merged->address, 0x100000u);
  EXPECT_EQ(merged->size, 1u << 20);
  EXPECT_EQ(segment->first, merged);
  EXPECT_EQ(pool.free_bytes(), 1u << 20);
}

TEST(BlockPool, KeepsSmallRemaindersAttached) {
  BlockPool pool(Tier::hbm, PoolKind::small, nullptr);
  pool.add_segment(0x200000, 8192);
  Block* a = pool.take(8192 - 256, kAny, 512, kAny);
  EXPECT_EQ(a->size, 8192u);  // a 256 B tail is below the split remainder
  EXPECT_EQ(pool.free_bytes(), 0u);
}

TEST(BlockPool, UnsplittableBlocksStayWhole) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x400000, 1 << 24);
  Block* a = pool.take(1 << 20, kAny, 512, 1 << 22);
  EXPECT_EQ(a->size, 1u << 24);
}

TEST(BlockPool, RemovesOnlyWhollyFreeSegments) {
  BlockPool pool(Tier::ddr, PoolKind::large, nullptr);
  pool.add_segment(0x1000000, 1 << 20);
  pool.add_segment(0x2000000, 1 << 20);
  Block* held = pool.take(1 << 20, kAny, 512, kAny);
  std::size_t given_back = 0;
  const auto keep_none = [](const Segment&) { return false; };
  EXPECT_EQ(pool.remove_free_segments(keep_none, [&](const Segment& s) { given_back += s.size; }),
            1u << 20);
  EXPECT_EQ(given_back, 1u << 20);
  EXPECT_EQ(pool.reserved_bytes(), 1u << 20);
  ASSERT_NE(pool.segments(), nullptr);
  EXPECT_EQ(pool.segments()->address, held->address);
  EXPECT_EQ(pool.segments()->next, nullptr);
}

// Segments leave the idle list with their first allocated block and return with
// their last free: only those are removed, however often the list changed.
TEST(BlockPool, IdleSegmentsFollowTheirBlocks) {
  BlockPool pool(Tier::hbm, PoolKind::small, nullptr);
  for (std::uintptr_t i = 1; i <= 4; ++i) pool.add_segment(i << 24, 1 << 20);
  std::map<std::uintptr_t, std::vector<Block*>> by_segment;
  for (int i = 0; i < 8; ++i) {
    Block* b = pool.take(1 << 19, kAny, 512, kAny);  // two per segment: all full
    by_segment[b->segment->address].push_back(b);
  }
  ASSERT_EQ(by_segment.size(), 4u);
  auto it = by_segment.begin();
  const std::uintptr_t emptied = it->first;
  for (Block* b : it->second) pool.release(b);  // wholly free again
  it->second.clear();
  ++it;
  pool.release(it->second.back());  // half free: stays
  it->second.pop_back();
  std::vector<std::uintptr_t> removed;
  const auto keep_none = [](const Segment&) { return false; };
  EXPECT_EQ(
      pool.remove_free_segments(keep_none, [&](const Segment& s) { removed.push_back(s.address); }),
      1u << 20);
  EXPECT_EQ(removed, std::vector<std::uintptr_t>{emptied});
  EXPECT_EQ(pool.reserved_bytes(), 3u << 20);
  for (auto& [address, blocks] : by_segment) {
    for (Block* b : blocks) pool.release(b);
  }
  EXPECT_EQ(pool.remove_free_segments(keep_none, [](const Segment&) {}), 3u << 20);
  EXPECT_EQ(pool.segments(), nullptr);
}

// A segment split at a block and joined again: blocks keep their places, the parts
// keep flags and granule base, free neighbours at the seam count as split blocks only
// while they have a neighbour, and merge when joined.
TEST(BlockPool, SplitsASegmentAtABlockAndJoinsItAgain) {
  Stats totals;
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr, &totals);
  Segment* whole = pool.add_segment(0x1000000, 1 << 20);
  Block* a = pool.take(1 << 18, kAny, 512, kAny);
  Block* b = pool.take(1 << 18, kAny, 512, kAny);
  pool.release(a);  // free, then b, then free
  ASSERT_EQ(totals.inactive_split.all.current, 2);
  Segment* back = pool.split_segment(*whole, b);
  EXPECT_EQ(whole->size, 1u << 18);
  EXPECT_EQ(back->address, b->address);
  EXPECT_EQ(back->size, 3u << 18);
  EXPECT_EQ(back->granule_base, whole->address);
  EXPECT_EQ(b->segment, back);
  EXPECT_EQ(back->allocated_blocks, 1u);
  EXPECT_EQ(whole->allocated_blocks, 0u);
  // `a`, alone in its segment now, is no split block; the tail after b still is.
  EXPECT_EQ(totals.inactive_split.all.current, 1);
  // The idle part can be removed like any segment with no allocated block.
  std::vector<std::uintptr_t> idle;
  const auto note_and_keep = [&](const Segment& s) {
    idle.push_back(s.address);
    return true;
  };
  pool.remove_free_segments(note_and_keep, [](const Segment&) {});
  EXPECT_EQ(idle, std::vector<std::uintptr_t>{0x1000000});
  EXPECT_EQ(pool.take_at(*whole, whole->address, 4096)->segment, whole);
  pool.release(whole->first);
  pool.release(b);
  pool.join_segments(*whole, *back);
  EXPECT_EQ(whole->size, 1u << 20);
  ASSERT_EQ(whole->first->size, 1u << 20) << "the free blocks at the seam merged";
  EXPECT_EQ(whole->first->next, nullptr);
  EXPECT_EQ(pool.segments(), whole);
  EXPECT_EQ(whole->next, nullptr);
  EXPECT_EQ(totals.inactive_split.all.current, 0);
  EXPECT_EQ(pool.free_bytes(), 1u << 20);
  EXPECT_EQ(pool.remove_free_segments([](const Segment&) { return false; }, [](const Segment&) {}),
            1u << 20);
}

TEST(BlockPool, KeptSegmentsStay) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x1000000, 1 << 20);
  pool.add_segment(0x2000000, 1 << 20);
  const auto keep_first = [](const Segment& s) { return s.address == 0x1000000; };
  EXPECT_EQ(pool.remove_free_segments(keep_first, [](const Segment&) {}), 1u << 20);
  EXPECT_EQ(pool.segments()->address, 0x1000000u);
}

TEST(BlockPool, MapsAndUnmapsInsideOneRange) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x10000000, 64 << 20, false);
  EXPECT_EQ(pool.reserved_bytes(), 0u);
  EXPECT_EQ(pool.take(1 << 20, kAny, 512, kAny), nullptr);  // nothing mapped yet
  Block* unmapped = pool.find_unmapped(8 << 20);
  ASSERT_NE(unmapped, nullptr);
  Block* mapped = pool.map_range(unmapped, unmapped->address, 8 << 20);
  EXPECT_EQ(mapped->address, 0x10000000u);
  EXPECT_EQ(pool.reserved_bytes(), 8u << 20);
  Block* a = pool.take(3 << 20, kAny, 512, kAny);
  ASSERT_NE(a, nullptr);
  Block* rest = pool.largest_free_block();
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->size, 5u << 20);
  pool.unmap_range(rest, 0x10000000 + (4 << 20), 4 << 20);
  EXPECT_EQ(pool.reserved_bytes(), 4u << 20);
  EXPECT_EQ(pool.free_bytes(), 1u << 20);
  // The unmapped stretch merged with the never-mapped tail of the range.
  EXPECT_EQ(pool.find_unmapped(60 << 20)->address, 0x10000000u + (4 << 20));
  Block* merged = pool.release(a);
  EXPECT_EQ(merged->size, 4u << 20);
}

TEST(BlockPool, MapsTheBackOfAnUnmappedStretchOntoTheFreeBlockAfterIt) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x10000000, 16 << 20, false);
  pool.map_range(pool.find_unmapped(16 << 20), 0x10000000, 16 << 20);
  Block* head = pool.take(4 << 20, kAny, 512, kAny);
  Block* tail = pool.take(4 << 20, kAny, 512, kAny);  // [head 4][tail 4][free 8]
  pool.release(head);
  pool.unmap_range(pool.largest_free_block(), 0x10000000 + (8 << 20), 8 << 20);
  pool.release(tail);  // [free 8][unmapped 8]
  Block* free_block = pool.largest_free_block();
  pool.unmap_range(free_block, 0x10000000, 6 << 20);  // [unmapped 6][free 2][unmapped 8]
  Block* mapped = pool.map_range(pool.find_unmapped(6 << 20), 0x10000000 + (4 << 20), 2 << 20);
  EXPECT_EQ(mapped->address, 0x10000000u + (4 << 20));
  EXPECT_EQ(mapped->size, 4u << 20);  // merged with the free block after it
  EXPECT_EQ(pool.reserved_bytes(), 4u << 20);
  EXPECT_EQ(pool.find_unmapped(4 << 20)->size, 4u << 20);  // the front stays unmapped
}

// With a mapping granule a request goes to whichever end of the free block needs
// fewer granules of its own: here the end, whose last granule a live block shares.
TEST(BlockPool, PlacesARequestWhereItMapsFewestGranulesOfItsOwn) {
  constexpr std::uintptr_t kBase = 0x10000000;
  constexpr std::size_t kMiB = 1 << 20;
  for (const bool with_granule : {false, true}) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    pool.add_segment(kBase, 16 * kMiB, false);
    if (with_granule) pool.set_mapping_granule(2 * kMiB);
    pool.map_range(pool.find_unmapped(10 * kMiB), kBase, 10 * kMiB);
    Block* left = pool.take(3 * kMiB / 2, kAny, 512, kAny);     // [0, 1.5)
    Block* middle = pool.take(15 * kMiB / 2, kAny, 512, kAny);  // [1.5, 9)
    Block* right = pool.take(kMiB, kAny, 512, kAny);            // [9, 10)
    ASSERT_EQ(left->address, kBase);
    ASSERT_EQ(right->address, kBase + 9 * kMiB);
    pool.release(middle);
    Block* placed = pool.take(3 * kMiB, kAny, 512, kAny);
    // At the start it would touch granules [2, 4) and [4, 6) besides left's [0, 2);
    // at the end only [6, 8), as right uses [8, 10) anyway.
    EXPECT_EQ(placed->address, with_granule ? kBase + 6 * kMiB : kBase + 3 * kMiB / 2);
  }
}

// On a tie in granules the remainder stays beside unmapped space, where growth can
// extend it, not between two live blocks.
TEST(BlockPool, LeavesTheRemainderBesideUnmappedSpaceOnATie) {
  constexpr std::uintptr_t kBase = 0x10000000;
  constexpr std::size_t kMiB = 1 << 20;
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(kBase, 16 * kMiB, false);
  pool.set_mapping_granule(2 * kMiB);
  pool.map_range(pool.find_unmapped(8 * kMiB), kBase, 8 * kMiB);
  Block* first = pool.take(6 * kMiB, kAny, 512, kAny);
  Block* last = pool.take(2 * kMiB, kAny, 512, kAny);
  ASSERT_EQ(last->address, kBase + 6 * kMiB);
  pool.unmap_range(pool.release(first), kBase, 2 * kMiB);  // [unmapped 2][free 4][last 2]
  // Either end touches one granule of its own: [2, 4) or [4, 6).
  Block* placed = pool.take(kMiB, kAny, 512, kAny);
  EXPECT_EQ(placed->address, kBase + 5 * kMiB);
  EXPECT_EQ(pool.largest_free_block()->address, kBase + 2 * kMiB);
}

// A request of whole granules starts at a granule boundary when that maps no more than
// packing it against a neighbour and skips less than a quarter of a granule's bytes:
// packed, it would span one granule more, which stays mapped after it is freed while
// either neighbour lives. The space before the boundary serves later requests.
TEST(BlockPool, StartsWholeGranulesAtAGranuleBoundaryAfterASmallNeighbour) {
  constexpr std::uintptr_t kBase = 0x10000000;
  constexpr std::size_t kMiB = 1 << 20;
  struct Case {
    std::size_t neighbour;
    std::uintptr_t whole_at;  // of 4 MiB, after the neighbour at the range's start
    std::uintptr_t next_at;   // of 1 MiB after that
  };
  // After 64 KiB, packed it would span [0, 6): granules 1 and 2 besides the neighbour's
  // 0; at 2 MiB, [2, 6). After 512 KiB, a quarter of a granule: packed.
  for (const Case& c : {Case{64 * 1024, kBase + 2 * kMiB, kBase + 64 * 1024},
                        Case{kMiB / 2, kBase + kMiB / 2, kBase + 9 * kMiB / 2}}) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    pool.add_segment(kBase, 16 * kMiB, false);
    pool.set_mapping_granule(2 * kMiB);
    pool.map_range(pool.find_unmapped(8 * kMiB), kBase, 8 * kMiB);
    ASSERT_EQ(pool.take(c.neighbour, kAny, 512, kAny)->address, kBase);
    EXPECT_EQ(pool.take(4 * kMiB, kAny, 512, kAny)->address, c.whole_at) << c.neighbour;
    EXPECT_EQ(pool.take(kMiB, kAny, 512, kAny)->address, c.next_at) << c.neighbour;
  }
}

// With a mapping granule, requests of an eighth of a granule or more take the lowest
// free block that holds them, not the best-fitting one; smaller ones still best-fit.
TEST(BlockPool, TakesTheLowestFitWithAMappingGranule) {
  constexpr std::uintptr_t kBase = 0x10000000;
  constexpr std::size_t kMiB = 1 << 20;
  for (const bool with_granule : {false, true}) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    pool.add_segment(kBase, 32 * kMiB, false);
    if (with_granule) pool.set_mapping_granule(2 * kMiB);
    pool.map_range(pool.find_unmapped(16 * kMiB), kBase, 16 * kMiB);
    // [wide 6][live 2][snug 1][live 7]: snug fits 1 MiB best, wide lies lower.
    Block* wide = pool.take(6 * kMiB, kAny, 512, kAny);
    pool.take(2 * kMiB, kAny, 512, kAny);
    Block* snug = pool.take(kMiB, kAny, 512, kAny);
    pool.take(7 * kMiB, kAny, 512, kAny);
    pool.release(wide);
    pool.release(snug);
    Block* large = pool.take(kMiB, kAny, 512, kAny);
    EXPECT_EQ(large->address < kBase + 6 * kMiB, with_granule);
    pool.release(large);
    Block* small = pool.take(64 * 1024, kAny, 512, kAny);  // under 2 MiB / 8
    EXPECT_EQ(small->address, kBase + 8 * kMiB);
  }
}

// With a mapping granule, a small request takes a free block within two blocks of a
// live small one (a run of biases and statistics) over a better fit between large
// blocks, where a small block that lasts keeps a granule mapped; without a small block
// near any candidate it best-fits.
TEST(BlockPool, GathersSmallBlocksNearSmallBlocksWithAMappingGranule) {
  constexpr std::uintptr_t kBase = 0x10000000;
  constexpr std::size_t kMiB = 1 << 20;
  constexpr std::size_t kKiB = 1 << 10;
  for (const bool with_granule : {false, true}) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    pool.add_segment(kBase, 32 * kMiB, false);
    if (with_granule) pool.set_mapping_granule(2 * kMiB);
    pool.map_range(pool.find_unmapped(16 * kMiB), kBase, 16 * kMiB);
    // [bias 0.5][gap 8][large 1 MiB][large 1 MiB][slot 4][large 1 MiB][free...]
    Block* bias = pool.take(512, kAny, 512, kAny);
    Block* gap = pool.take(8 * kKiB, kAny, 512, kAny);
    pool.take(kMiB, kAny, 512, kAny);
    Block* second = pool.take(kMiB, kAny, 512, kAny);
    Block* slot = pool.take(4 * kKiB, kAny, 512, kAny);
    pool.take(kMiB, kAny, 512, kAny);
    ASSERT_EQ(gap->address, bias->address + 512);
    ASSERT_EQ(slot->address, second->address + kMiB);
    const std::uintptr_t gap_at = gap->address;
    const std::uintptr_t slot_at = slot->address;
    pool.release(gap);
    pool.release(slot);
    Block* kept = pool.take(4 * kKiB, kAny, 512, kAny);
    EXPECT_EQ(kept->address, with_granule ? gap_at : slot_at);
    pool.release(kept);
    pool.release(bias);  // no small block left: the best fit again
    EXPECT_EQ(pool.take(4 * kKiB, kAny, 512, kAny)->address, slot_at);
  }
}

// Takes and releases at random keep the address index in step with the blocks: every
// request of an eighth of a granule or more lands in the lowest free block that fits
// it (found here by walking the range), through splits at either end and merges.
TEST(BlockPool, FirstFitFollowsTheBlocksUnderChurn) {
  constexpr std::uintptr_t kBase = 0x40000000;
  constexpr std::size_t kGranule = 2 << 20;
  constexpr std::size_t kRange = 64 * kGranule;
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  Segment* range = pool.add_segment(kBase, kRange, false);
  pool.set_mapping_granule(kGranule);
  pool.map_range(pool.find_unmapped(kRange), kBase, kRange);
  std::mt19937_64 rng(11);
  std::vector<Block*> live;
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && rng() % 2 == 0) {
      const std::size_t i = rng() % live.size();
      pool.release(live[i]);
      live[i] = live.back();
      live.pop_back();
      continue;
    }
    const std::size_t size = 512 * (1 + rng() % 8192);  // up to 4 MiB
    std::uintptr_t fit_begin = 0;
    std::uintptr_t fit_end = 0;
    for (const Block* b = range->first; b != nullptr; b = b->next) {
      if (!b->allocated && b->size >= size) {
        fit_begin = b->address;
        fit_end = b->address + b->size;
        break;
      }
    }
    Block* taken = pool.take(size, kAny, 512, kAny);
    ASSERT_EQ(taken != nullptr, fit_end != 0) << "step " << step;
    if (taken == nullptr) continue;
    if (size >= kGranule / 8) {
      ASSERT_GE(taken->address, fit_begin) << "step " << step;
      ASSERT_LE(taken->address + taken->size, fit_end) << "step " << step;
    }
    live.push_back(taken);
  }
  for (Block* b : live) pool.release(b);
  EXPECT_EQ(pool.free_bytes(), kRange);
  EXPECT_EQ(pool.largest_free(), kRange);
}

// The planned strategy's offsets: take_at carves exactly the range asked for whenever
// it lies inside one free block, in a closed segment (looked up where free blocks
// began at earlier takes, which may since have merged, split or been taken) and
// in an open one of a pool that indexes addresses, under churn that splits blocks at
// their head, middle and tail and merges them back. A range any live block overlaps
// is refused.
TEST(BlockPool, TakesExactRangesByAddressUnderChurn) {
  constexpr std::size_t kStep = 512;
  constexpr std::size_t kSteps = 4096;  // 2 MiB segments
  for (const bool closed : {true, false}) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    if (!closed) pool.index_addresses();
    Segment* before = pool.add_segment(0x10000000, kSteps * kStep);
    Segment* segment = pool.add_segment(0x20000000, kSteps * kStep);
    Segment* after = pool.add_segment(0x30000000, kSteps * kStep);
    if (closed) {
      pool.set_closed(*segment, true);
      pool.set_closed(*after, true);
    }
    Block* lasting = pool.take_at(*before, before->address + 100 * kStep, kStep);
    ASSERT_NE(lasting, nullptr);
    std::vector<bool> used(kSteps, false);  // the reference: which steps are live
    std::vector<Block*> live;
    std::vector<std::uintptr_t> held_before = {lasting->address};
    std::mt19937_64 rng(7);
    for (int round = 0; round < 20000; ++round) {
      if (!live.empty() && rng() % 2 == 0) {
        const std::size_t i = rng() % live.size();
        const std::size_t first = (live[i]->address - segment->address) / kStep;
        for (std::size_t s = first; s < first + live[i]->size / kStep; ++s) used[s] = false;
        pool.release(live[i]);
        live[i] = live.back();
        live.pop_back();
        continue;
      }
      const std::size_t first = rng() % kSteps;
      const std::size_t steps = std::min<std::size_t>(1 + rng() % 64, kSteps - first);
      bool free = true;
      for (std::size_t s = first; s < first + steps; ++s) free = free && !used[s];
      const std::uintptr_t address = segment->address + first * kStep;
      std::uintptr_t from = rng() % 4 == 0 ? 0 : held_before[rng() % held_before.size()];
      const std::uintptr_t also_from = rng() % 2 == 0 ? 0 : held_before[rng() % held_before.size()];
      Block* taken = pool.take_at(*segment, address, steps * kStep, &from, also_from);
      ASSERT_EQ(taken != nullptr, free) << "closed " << closed << " round " << round;
      if (taken == nullptr) continue;
      ASSERT_LE(from, address);
      held_before.push_back(from);
      ASSERT_EQ(taken->address, address);
      ASSERT_EQ(taken->size, steps * kStep);
      for (std::size_t s = first; s < first + steps; ++s) used[s] = true;
      live.push_back(taken);
    }
    std::size_t live_bytes = kStep;
    for (const Block* b : live) live_bytes += b->size;
    EXPECT_EQ(pool.free_bytes(), 3 * kSteps * kStep - live_bytes) << "closed " << closed;
    for (Block* b : live) pool.release(b);
    pool.release(lasting);
    EXPECT_EQ(pool.free_bytes(), 3 * kSteps * kStep);
    for (Segment* s : {before, segment, after}) {
      Block* whole = pool.take_at(*s, s->address, s->size);
      ASSERT_NE(whole, nullptr) << "closed " << closed;
      EXPECT_EQ(whole->size, s->size);
    }
  }
}

TEST(BlockPool, RefusesAMappingGranuleOnceBlocksAreMapped) {
  BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
  pool.add_segment(0x10000000, 4 << 20);
  EXPECT_THROW(pool.set_mapping_granule(2 << 20), std::logic_error);
}

}  // namespace
}  // namespace npumem::core
