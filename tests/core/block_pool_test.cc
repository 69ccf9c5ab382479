#include "core/block_pool.h"

#include <gtest/gtest.h>

#include <limits>

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
  Block* mapped = pool.map_front(unmapped, 8 << 20);
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

}  // namespace
}  // namespace npumem::core
