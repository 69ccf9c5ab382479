#include "device/sim/address_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace npumem {
namespace {

constexpr std::size_t kAlign = std::size_t{2} << 20;
constexpr std::size_t kArena = std::size_t{64} << 20;

std::uintptr_t at(void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

TEST(AddressSpace, RangesAreAlignedAndDisjoint) {
  AddressSpace space(kAlign, kArena);
  std::vector<std::uintptr_t> starts;
  for (int i = 0; i < 32; ++i) {
    void* ptr = space.take(kAlign);
    ASSERT_NE(ptr, nullptr);
    EXPECT_EQ(at(ptr) % kAlign, 0U);
    starts.push_back(at(ptr));
  }
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i) EXPECT_GE(starts[i], starts[i - 1] + kAlign);
  EXPECT_EQ(space.arena_count(), 1U);
}

TEST(AddressSpace, GrowsByArenasOnDemand) {
  AddressSpace space(kAlign, kArena);
  ASSERT_NE(space.take(kArena), nullptr);
  ASSERT_NE(space.take(kAlign), nullptr);
  EXPECT_EQ(space.arena_count(), 2U);
  // A request larger than an arena gets an arena of its own size.
  ASSERT_NE(space.take(4 * kArena), nullptr);
  EXPECT_EQ(space.arena_count(), 3U);
}

TEST(AddressSpace, FreedRangesCoalesceAndAreReused) {
  AddressSpace space(kAlign, kArena);
  std::vector<void*> ranges;
  for (std::size_t i = 0; i < kArena / kAlign; ++i) ranges.push_back(space.take(kAlign));
  EXPECT_EQ(space.free_bytes(), 0U);
  // Give back in an interleaved order: the neighbours must merge into one range.
  for (std::size_t i = 0; i < ranges.size(); i += 2) space.give_back(ranges[i], kAlign);
  for (std::size_t i = 1; i < ranges.size(); i += 2) space.give_back(ranges[i], kAlign);
  EXPECT_EQ(space.free_bytes(), kArena);
  void* whole = space.take(kArena);
  EXPECT_EQ(whole, ranges.front());
  EXPECT_EQ(space.arena_count(), 1U);
}

TEST(AddressSpace, BestFitPicksTheSmallestHole) {
  AddressSpace space(kAlign, kArena);
  void* a = space.take(4 * kAlign);
  ASSERT_NE(space.take(kAlign), nullptr);  // stays taken
  void* c = space.take(kAlign);
  ASSERT_NE(space.take(kAlign), nullptr);  // stays taken
  space.give_back(a, 4 * kAlign);          // a hole of 4
  space.give_back(c, kAlign);              // a hole of 1 between b and d
  EXPECT_EQ(space.take(kAlign), c);
  EXPECT_EQ(space.take(2 * kAlign), a);
}

TEST(AddressSpace, HandsOutFarMoreThanThisMachinesMemory) {
  AddressSpace space(kAlign, std::size_t{64} << 30);
  for (int i = 0; i < 8; ++i) ASSERT_NE(space.take(std::size_t{64} << 30), nullptr);
  EXPECT_EQ(space.arena_count(), 8U);
}

}  // namespace
}  // namespace npumem
