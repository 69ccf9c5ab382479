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

TEST(PointerMap, MatchesUnorderedMapUnderChurn) {
  PointerMap map;
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

}  // namespace
}  // namespace npumem::core
