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
  EXPECT_EQ(pool.remove_free_segments([&](const Segment& s) { given_back += s.size; }), 1u << 20);
  EXPECT_EQ(given_back, 1u << 20);
  EXPECT_EQ(pool.reserved_bytes(), 1u << 20);
  ASSERT_NE(pool.segments(), nullptr);
  EXPECT_EQ(pool.segments()->address, held->address);
  EXPECT_EQ(pool.segments()->next, nullptr);
}

}  // namespace
}  // namespace npumem::core
