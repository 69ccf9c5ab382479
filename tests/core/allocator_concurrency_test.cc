#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>
#include <vector>

#include "device/sim_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Two threads allocate and free at random; with `mark_every`, the first also marks an
// iteration every that many steps (the planned strategy learns and serves meanwhile).
void two_threads_stress(const Config& config, int mark_every) {
  SimSpec spec;
  spec.hbm_bytes = 128 * MiB;
  spec.ddr_bytes = 128 * MiB;
  spec.backing = Backing::host;
  Allocator allocator(std::make_shared<SimDevice>(spec), config);
  std::vector<std::map<void*, std::size_t>> kept(2);
  auto work = [&](int thread) {
    std::mt19937_64 rng(static_cast<unsigned>(thread) + 1);
    std::vector<std::pair<unsigned char*, std::size_t>> mine;
    for (int step = 0; step < 20000; ++step) {
      if (thread == 0 && mark_every != 0 && step % mark_every == 0) allocator.mark_iteration();
      if (!mine.empty() && (rng() % 2 == 0 || mine.size() > 64)) {
        const std::size_t i = rng() % mine.size();
        auto [p, bytes] = mine[i];
        // Memory stays ours while held: the first byte still carries our mark.
        ASSERT_EQ(p[0], static_cast<unsigned char>(thread + 1));
        allocator.deallocate(p);
        mine[i] = mine.back();
        mine.pop_back();
      } else {
        const std::size_t bytes = rng() % 8 == 0 ? MiB + rng() % (3 * MiB) : 1 + rng() % 65536;
        auto* p = static_cast<unsigned char*>(allocator.allocate(bytes));
        p[0] = static_cast<unsigned char>(thread + 1);
        mine.emplace_back(p, bytes);
      }
    }
    for (auto [p, bytes] : mine) kept[static_cast<std::size_t>(thread)][p] = bytes;
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  std::map<void*, std::size_t> live = kept[0];
  live.insert(kept[1].begin(), kept[1].end());
  testing::expect_consistent(allocator, live);
  // Whether a plan ever matches depends on how the threads interleave; learning does not.
  if (config.strategy == Strategy::planned) {
    EXPECT_GT(allocator.planned_stats().plans_learned, 0u);
  }
  for (const auto& [p, bytes] : live) allocator.deallocate(p);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
}

TEST(AllocatorConcurrency, TwoThreadsStress) {
  two_threads_stress(Config{}, 0);
}

TEST(AllocatorConcurrency, TwoThreadsStressThePlannedStrategyAcrossIterations) {
  Config config;
  config.strategy = Strategy::planned;
  two_threads_stress(config, 500);
}

}  // namespace
}  // namespace npumem
