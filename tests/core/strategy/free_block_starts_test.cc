#include "core/strategy/free_block_starts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/pool/block_pool.h"

namespace npumem::core {
namespace {

constexpr std::uint64_t kStep = 512;

TEST(FreeBlockStarts, FollowsSplitsAndMergesInOrder) {
  // [0, 4) then [4, 6) from an empty space of 16 steps; [0, 4) freed; [1, 3) comes from
  // the block [0, 4) left (it merged with nothing: [4, 6) is live); [6, 7) from [6, 16).
  const std::vector<PlacedRequest> requests = {{0, 4 * kStep, 0, 2},
                                               {4 * kStep, 2 * kStep, 1, std::nullopt},
                                               {1 * kStep, 2 * kStep, 3, std::nullopt},
                                               {6 * kStep, kStep, 4, std::nullopt}};
  const std::vector<std::uint64_t> starts = free_block_starts(requests, {{0, 16 * kStep}});
  EXPECT_EQ(starts, (std::vector<std::uint64_t>{0, 4 * kStep, 0, 6 * kStep}));
}

TEST(FreeBlockStarts, MergesAFreedRangeWithBothNeighbours) {
  const std::vector<PlacedRequest> requests = {
      {0, kStep, 0, 3}, {kStep, kStep, 1, 4}, {2 * kStep, kStep, 2, 5}, {0, 3 * kStep, 6, 7}};
  const std::vector<std::uint64_t> starts = free_block_starts(requests, {{0, 3 * kStep}});
  EXPECT_EQ(starts[3], 0u);
}

TEST(FreeBlockStarts, NamesNoBlockForARangeThatIsNotFree) {
  const std::vector<PlacedRequest> requests = {{0, 2 * kStep, 0, std::nullopt},
                                               {kStep, 2 * kStep, 1, std::nullopt},
                                               {8 * kStep, kStep, 2, std::nullopt}};
  const std::vector<std::uint64_t> starts =
      free_block_starts(requests, {{0, 4 * kStep}, {6 * kStep, 8 * kStep}});
  EXPECT_EQ(starts[0], 0u);
  EXPECT_EQ(starts[1], kNoFreeBlock);
  EXPECT_EQ(starts[2], kNoFreeBlock) << "past the free blocks";
}

// Random plans made and freed, in time order, on a closed BlockPool segment with
// take_at and release: every start is where take_at found the request's free block.
TEST(FreeBlockStarts, AgreesWithTheBlockPool) {
  constexpr std::uint64_t kSteps = 256;
  constexpr std::uintptr_t kBase = 0x10000000;
  std::mt19937_64 random(7);
  for (int plan = 0; plan < 20; ++plan) {
    BlockPool pool(Tier::hbm, PoolKind::large, nullptr);
    Segment* segment = pool.add_segment(kBase, kSteps * kStep);
    pool.set_closed(*segment, true);
    std::vector<PlacedRequest> requests;
    std::vector<std::uint64_t> found;  // where take_at found each request's free block
    std::vector<Block*> blocks;
    std::vector<bool> used(kSteps, false);
    std::vector<std::size_t> live;
    for (std::uint32_t time = 0; time < 2000; ++time) {
      if (!live.empty() && random() % 2 == 0) {
        const std::size_t k = random() % live.size();
        PlacedRequest& r = requests[live[k]];
        r.freed = time;
        for (std::uint64_t s = r.begin / kStep; s < (r.begin + r.bytes) / kStep; ++s) {
          used[s] = false;
        }
        pool.release(blocks[live[k]]);
        live[k] = live.back();
        live.pop_back();
        continue;
      }
      const std::uint64_t first = random() % kSteps;
      const std::uint64_t steps = std::min<std::uint64_t>(1 + random() % 16, kSteps - first);
      bool free = true;
      for (std::uint64_t s = first; s < first + steps; ++s) free = free && !used[s];
      if (!free) continue;
      for (std::uint64_t s = first; s < first + steps; ++s) used[s] = true;
      std::uintptr_t from = 0;
      blocks.push_back(pool.take_at(*segment, kBase + first * kStep, steps * kStep, &from));
      ASSERT_NE(blocks.back(), nullptr);
      found.push_back(from - kBase);
      live.push_back(requests.size());
      requests.push_back({first * kStep, steps * kStep, time, std::nullopt});
    }
    EXPECT_EQ(free_block_starts(requests, {{0, kSteps * kStep}}), found) << "plan " << plan;
    for (const std::size_t k : live) pool.release(blocks[k]);
  }
}

}  // namespace
}  // namespace npumem::core
