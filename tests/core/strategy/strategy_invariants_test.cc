// The allocator invariant suite, run under every strategy on every backend: the
// virtual NPU and acl:0 over the test double of libascendcl.so.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

Config config_for(Strategy strategy) {
  Config config;
  config.strategy = strategy;
  config.static_size = 160 * MiB;
  config.static_fallback = true;
  return config;
}

using testing::Backend;
using testing::TestDevice;

class StrategyInvariants : public ::testing::TestWithParam<std::tuple<Strategy, Backend>> {
 protected:
  Strategy strategy() const { return std::get<0>(GetParam()); }
  std::shared_ptr<Device> make(const SimSpec& spec) const {
    return TestDevice(std::get<1>(GetParam()), spec).device();
  }
};

TEST_P(StrategyInvariants, HoldThroughALongRandomSequence) {
  SimSpec spec;
  spec.hbm_bytes = 256 * MiB;
  spec.ddr_bytes = 256 * MiB;
  auto device = make(spec);
  {
    Allocator allocator(device, config_for(strategy()));
    std::mt19937_64 rng(42);
    std::map<void*, std::size_t> live;
    std::vector<void*> order;
    for (int step = 0; step < 4000; ++step) {
      if (!order.empty() && (rng() % 100 < 45 || live.size() > 300)) {
        const std::size_t i = rng() % order.size();
        allocator.deallocate(order[i]);
        live.erase(order[i]);
        order[i] = order.back();
        order.pop_back();
      } else {
        const bool large = rng() % 4 == 0;
        const std::size_t bytes = large ? MiB + rng() % (40 * MiB) : 1 + rng() % (256 * KiB);
        try {
          void* p = allocator.allocate(bytes);
          live[p] = bytes;
          order.push_back(p);
        } catch (const OutOfMemory&) {
        }
      }
      if (step % 97 == 0) {
        testing::expect_consistent(allocator, live);
        if (HasFatalFailure()) return;
      }
      if (step % 1000 == 999) allocator.empty_cache();
      if (step % 50 == 49) allocator.mark_iteration();
    }
    testing::expect_consistent(allocator, live);
    for (void* p : order) allocator.deallocate(p);
    allocator.empty_cache();
    testing::expect_consistent(allocator, {});
    const bool arena_stays = strategy() == Strategy::static_arena;
    EXPECT_EQ(allocator.stats().reserved_bytes.all.current,
              arena_stays ? static_cast<std::int64_t>(160 * MiB) : 0);
  }
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 0u);
  EXPECT_EQ(device->tier_info(Tier::ddr).used_bytes, 0u);
}

TEST_P(StrategyInvariants, SpillAndMisuseBehaveAlike) {
  SimSpec spec;
  spec.hbm_bytes = 64 * MiB;
  spec.ddr_bytes = 256 * MiB;
  Config config = config_for(strategy());
  config.static_size = 40 * MiB;
  Allocator allocator(make(spec), config);
  void* a = allocator.allocate(30 * MiB);
  void* b = allocator.allocate(60 * MiB);
  EXPECT_EQ(allocator.tier_of(a), Tier::hbm);
  EXPECT_EQ(allocator.tier_of(b), Tier::ddr);
  allocator.deallocate(b);
  EXPECT_THROW(allocator.deallocate(b), InvalidPointer);
  testing::expect_consistent(allocator, {{a, 30 * MiB}});
  allocator.deallocate(a);
}

INSTANTIATE_TEST_SUITE_P(
    AllStrategies, StrategyInvariants,
    ::testing::Combine(::testing::Values(Strategy::caching, Strategy::expandable,
                                         Strategy::static_arena, Strategy::planned),
                       ::testing::ValuesIn(testing::kBackends)),
    [](const auto& info) {
      return std::string(strategy_name(std::get<0>(info.param))) + "_on_" +
             testing::backend_name(std::get<1>(info.param));
    });

}  // namespace
}  // namespace npumem
