#include "core/pool/address_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

namespace npumem::core {
namespace {

// The lowest-addressed block of at least min_size among `indexed`, by brute force.
const Block* lowest_of(const std::map<std::uintptr_t, Block*>& indexed, std::size_t min_size) {
  for (const auto& [address, block] : indexed) {
    if (block->size >= min_size) return block;
  }
  return nullptr;
}

TEST(AddressIndex, FindsTheLowestBlockOfASize) {
  Block a{}, b{}, c{};
  a.address = 0x1000;
  a.size = 64;
  b.address = 0x2000;
  b.size = 512;
  c.address = 0x3000;
  c.size = 4096;
  AddressIndex index;
  EXPECT_EQ(index.lowest(1), nullptr);
  index.insert(&c);
  index.insert(&a);
  index.insert(&b);
  EXPECT_EQ(index.lowest(1), &a);
  EXPECT_EQ(index.lowest(65), &b);
  EXPECT_EQ(index.lowest(513), &c);
  EXPECT_EQ(index.lowest(4097), nullptr);
  index.remove(&b);
  EXPECT_EQ(index.lowest(65), &c);
}

// Every operation the block pool uses (insert, remove, a part taking a block's node,
// growth in place), at random, against a brute-force reference.
TEST(AddressIndex, MatchesABruteForceSearchUnderChurn) {
  constexpr std::size_t kSlots = 4000;
  constexpr std::size_t kSlotBytes = 1 << 16;
  std::vector<Block> blocks(2 * kSlots);
  std::map<std::uintptr_t, Block*> indexed;
  AddressIndex index;
  std::mt19937_64 rng(14);
  std::vector<bool> used(kSlots, false);
  for (int step = 0; step < 60000; ++step) {
    const std::size_t slot = rng() % kSlots;
    // Each slot holds at most one indexed block, inside its own kSlotBytes.
    Block* block = &blocks[2 * slot];
    Block* spare = &blocks[2 * slot + 1];
    const std::uintptr_t base = 0x10000000 + slot * kSlotBytes;
    if (!used[slot]) {
      Block* fresh = rng() % 2 == 0 ? block : spare;
      fresh->address = base + 512 * (rng() % 16);
      fresh->size = 512 * (1 + rng() % 64);
      index.insert(fresh);
      indexed[fresh->address] = fresh;
      used[slot] = true;
    } else {
      auto found = indexed.lower_bound(base);
      Block* present = found->second;
      Block* other = present == block ? spare : block;
      const std::size_t old_size = present->size;
      switch (rng() % 3) {
        case 0:
          index.remove(present);
          indexed.erase(found);
          used[slot] = false;
          break;
        case 1: {  // a part of it takes its place: its tail, or its shrunk self
          indexed.erase(found);
          const std::size_t cut = 512 * (rng() % (old_size / 512));
          Block* part = present;
          if (rng() % 2 == 0) {
            other->address = present->address + cut;
            other->size = old_size - cut;
            part = other;
          } else {
            present->size = old_size - cut;
          }
          index.replace(present, part);
          indexed[part->address] = part;
          break;
        }
        default:  // it absorbs free space after it, inside its slot
          present->size =
              std::min(old_size + 512 * (rng() % 8), base + kSlotBytes - present->address);
          index.grew(present);
          break;
      }
    }
    const std::size_t probe = 512 * (1 + rng() % 80);
    ASSERT_EQ(index.lowest(probe), lowest_of(indexed, probe)) << "step " << step;
  }
}

}  // namespace
}  // namespace npumem::core
