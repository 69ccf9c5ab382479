#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>
#include <vector>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Two threads allocate and free at random; with `mark_every`, the first also marks an
// iteration every that many steps (the planned strategy learns and serves meanwhile).
void two_threads_stress(testing::Backend backend, const Config& config, int mark_every) {
  SimSpec spec;
  spec.hbm_bytes = 128 * MiB;
  spec.ddr_bytes = 128 * MiB;
  spec.backing = Backing::host;
  const std::shared_ptr<Device> device = testing::TestDevice(backend, spec).device();
  Allocator allocator(device, config);
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
        ASSERT_TRUE(testing::holds(*device, p, static_cast<unsigned char>(thread + 1), 1));
        allocator.deallocate(p);
        mine[i] = mine.back();
        mine.pop_back();
      } else {
        const std::size_t bytes = rng() % 8 == 0 ? MiB + rng() % (3 * MiB) : 1 + rng() % 65536;
        auto* p = static_cast<unsigned char*>(allocator.allocate(bytes));
        testing::fill(*device, p, static_cast<unsigned char>(thread + 1), 1);
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

// Runs on the virtual NPU and on acl:0 over the test double of libascendcl.so, where
// each thread's first device call also has to make the NPU current on that thread.
class AllocatorConcurrency : public ::testing::TestWithParam<testing::Backend> {};

TEST_P(AllocatorConcurrency, TwoThreadsStress) {
  two_threads_stress(GetParam(), Config{}, 0);
}

TEST_P(AllocatorConcurrency, TwoThreadsStressThePlannedStrategyAcrossIterations) {
  Config config;
  config.strategy = Strategy::planned;
  two_threads_stress(GetParam(), config, 500);
}

INSTANTIATE_TEST_SUITE_P(Devices, AllocatorConcurrency, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
