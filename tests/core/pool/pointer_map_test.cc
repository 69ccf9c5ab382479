#include "core/pool/pointer_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace npumem::core {
namespace {

TEST(PointerMap, InsertFindErase) {
  PointerMap map;
  Block a, b;
  map.insert(0x1000, &a);
  map.insert(0x2000, &b);
  EXPECT_EQ(map.find(0x1000), &a);
  EXPECT_EQ(map.find(0x2000), &b);
  EXPECT_EQ(map.find(0x3000), nullptr);
  EXPECT_EQ(map.erase(0x1000), &a);
  EXPECT_EQ(map.erase(0x1000), nullptr);
  EXPECT_EQ(map.find(0x2000), &b);
  EXPECT_EQ(map.size(), 1u);
}

// Both a table of the usual size and one that starts at two slots (as the block pools'
// free-block tables nearly do) and grows through every power of two.
TEST(PointerMap, MatchesUnorderedMapUnderChurn) {
  for (const std::size_t initial_slots : {std::size_t{1024}, std::size_t{1}}) {
    SCOPED_TRACE(initial_slots);
    PointerMap map(initial_slots);
    std::unordered_map<std::uintptr_t, Block*> reference;
    std::vector<Block> blocks(50000);
    std::mt19937_64 rng(11);
    for (int step = 0; step < 200000; ++step) {
      const std::uintptr_t address = 0x100000 + (rng() % 50000) * 512;
      Block* block = &blocks[(address - 0x100000) / 512];
      if (reference.count(address) != 0) {
        ASSERT_EQ(map.erase(address), block);
        reference.erase(address);
      } else {
        map.insert(address, block);
        reference[address] = block;
      }
      const std::uintptr_t probe = 0x100000 + (rng() % 50000) * 512;
      const auto it = reference.find(probe);
      ASSERT_EQ(map.find(probe), it == reference.end() ? nullptr : it->second);
    }
    EXPECT_EQ(map.size(), reference.size());
  }
}

// Address patterns that share or collide on slot runs: dense blocks of a fine granule
// (eight per 512-byte step), blocks at power-of-two alignments, and dense segments far
// apart. Every block stays findable through growth and through erasing every other one
// (backward shifts across run boundaries), and erased ones are gone.
TEST(PointerMap, KeepsEveryBlockOfDenseAndAlignedPatterns) {
  const std::uintptr_t base = 0x7f3a00000000;
  std::vector<std::uintptr_t> addresses;
  for (std::uintptr_t i = 0; i < 20000; ++i) addresses.push_back(base + i * 64);
  for (std::uintptr_t i = 0; i < 20000; ++i)
    addresses.push_back(base + (1ull << 32) + i * (2ull << 20));
  for (std::uintptr_t segment = 0; segment < 40; ++segment) {
    for (std::uintptr_t i = 0; i < 500; ++i) {
      addresses.push_back(base + (64ull << 32) + segment * (64ull << 20) + i * 512);
    }
  }
  std::vector<Block> blocks(addresses.size());
  PointerMap map;
  for (std::size_t i = 0; i < addresses.size(); ++i) map.insert(addresses[i], &blocks[i]);
  ASSERT_EQ(map.size(), addresses.size());
  for (std::size_t i = 0; i < addresses.size(); ++i) ASSERT_EQ(map.find(addresses[i]), &blocks[i]);
  for (std::size_t i = 0; i < addresses.size(); i += 2)
    ASSERT_EQ(map.erase(addresses[i]), &blocks[i]);
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    ASSERT_EQ(map.find(addresses[i]), i % 2 == 0 ? nullptr : &blocks[i]) << i;
  }
  EXPECT_EQ(map.size(), addresses.size() / 2);
}

}  // namespace
}  // namespace npumem::core
