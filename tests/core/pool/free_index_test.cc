#include "core/pool/free_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

namespace npumem::core {
namespace {

constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();

std::vector<Block> make_blocks(const std::vector<std::size_t>& sizes) {
  std::vector<Block> blocks(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    blocks[i].size = sizes[i];
    blocks[i].address = 0x10000 * (i + 1);
  }
  return blocks;
}

TEST(FreeIndex, FindsExactAndBestFit) {
  auto blocks = make_blocks({512, 4096, 1536, 1 << 20, 3072});
  FreeIndex index;
  for (Block& b : blocks) index.insert(&b);
  EXPECT_EQ(index.count(), 5u);
  EXPECT_EQ(index.find(1536, kAny), &blocks[2]);
  EXPECT_EQ(index.find(1024, kAny), &blocks[2]);  // smallest that fits
  EXPECT_EQ(index.find(2048, kAny), &blocks[4]);
  EXPECT_EQ(index.find(5000, kAny), &blocks[3]);
  EXPECT_EQ(index.find((1 << 20) + 1, kAny), nullptr);
  EXPECT_EQ(index.largest(), &blocks[3]);
}

TEST(FreeIndex, FindFirstVisitsOnlyLargeEnoughBlocks) {
  auto blocks = make_blocks({512, 4096, 1536, 1 << 20, 3072});
  FreeIndex index;
  for (Block& b : blocks) index.insert(&b);
  std::vector<std::size_t> seen;
  const auto record = [&](const Block& b) {
    seen.push_back(b.size);
    return false;
  };
  EXPECT_EQ(index.find_first(2048, record), nullptr);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::size_t>{3072, 4096, 1 << 20}));
  EXPECT_EQ(index.find_first(1024, [](const Block& b) { return b.size % 1024 == 0; }),
            &blocks[4]);  // 1536 is visited first and refused; 3072 is the next bucket
}

TEST(FreeIndex, RespectsMaximumSize) {
  auto blocks = make_blocks({8192, 1 << 24});
  FreeIndex index;
  for (Block& b : blocks) index.insert(&b);
  EXPECT_EQ(index.find(16384, 1 << 20), nullptr);
  EXPECT_EQ(index.find(4096, 1 << 20), &blocks[0]);
}

TEST(FreeIndex, RemoveKeepsBitmapsExact) {
  auto blocks = make_blocks({4096, 4096, 65536});
  FreeIndex index;
  for (Block& b : blocks) index.insert(&b);
  index.remove(&blocks[0]);
  index.remove(&blocks[1]);
  EXPECT_EQ(index.find(4096, kAny), &blocks[2]);
  index.remove(&blocks[2]);
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.find(512, kAny), nullptr);
  EXPECT_EQ(index.largest(), nullptr);
}

// Against a brute-force reference: the block found always fits, and when the
// reference finds one the index finds one no more than a size class larger.
TEST(FreeIndex, AgreesWithBruteForceOnRandomSizes) {
  std::mt19937_64 rng(7);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 2000; ++i) sizes.push_back((1 + rng() % (1 << 16)) * 512);
  auto blocks = make_blocks(sizes);
  FreeIndex index;
  std::vector<bool> present(blocks.size(), false);
  for (int step = 0; step < 20000; ++step) {
    const std::size_t i = rng() % blocks.size();
    if (present[i]) {
      index.remove(&blocks[i]);
    } else {
      index.insert(&blocks[i]);
    }
    present[i] = !present[i];
    const std::size_t want = (1 + rng() % (1 << 16)) * 512;
    std::size_t best = kAny;
    for (std::size_t j = 0; j < blocks.size(); ++j) {
      if (present[j] && blocks[j].size >= want) best = std::min(best, blocks[j].size);
    }
    const Block* found = index.find(want, kAny);
    if (best == kAny) {
      ASSERT_EQ(found, nullptr);
    } else {
      ASSERT_NE(found, nullptr);
      ASSERT_GE(found->size, want);
      ASSERT_LE(found->size, best + best / 8);
    }
  }
}

}  // namespace
}  // namespace npumem::core
