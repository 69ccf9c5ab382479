#include "core/strategy/static_source.h"

#include <gtest/gtest.h>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

Config static_arena(std::uint64_t bytes, bool fallback = false) {
  Config config;
  config.strategy = Strategy::static_arena;
  config.static_size = bytes;
  config.static_fallback = fallback;
  return config;
}

using testing::Backend;
using testing::TestDevice;

// Every test runs on the virtual NPU and on acl:0 over the test double of libascendcl.so.
class Static : public ::testing::TestWithParam<Backend> {
 protected:
  TestDevice npu() const {
    SimSpec spec;
    spec.hbm_bytes = 1 * GiB;
    spec.ddr_bytes = 1 * GiB;
    return TestDevice(GetParam(), spec);
  }
  std::shared_ptr<Device> device() const { return npu().device(); }
};

std::uint64_t total_calls(const TestDevice& device) {
  DeviceCallCounts counts;
  if (!device.call_counts(&counts)) ADD_FAILURE() << "no call counts on this device";
  return counts.total();
}

TEST_P(Static, MakesNoDeviceCallAfterInitialisation) {
  if (!testing::controls_available(GetParam()))
    GTEST_SKIP() << "needs the test double's call counts";
  const TestDevice sim = npu();
  Allocator allocator(sim.device(), static_arena(64 * MiB));
  const std::uint64_t calls = total_calls(sim);
  std::vector<void*> blocks;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 20; ++i) blocks.push_back(allocator.allocate(1000 + i * 50000));
    for (void* p : blocks) allocator.deallocate(p);
    blocks.clear();
  }
  allocator.empty_cache();  // the arena is never given back
  EXPECT_EQ(total_calls(sim), calls);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(64 * MiB));
}

// The default arena rounds up to whole granules, as said: static_size:1MiB reserved
// 2 MiB without a word.
TEST_P(Static, AStaticSizeNotInWholeGranulesIsSaid) {
  Allocator whole(device(), static_arena(64 * MiB));
  EXPECT_TRUE(whole.warnings().empty());
  Allocator part(device(), static_arena(MiB));
  ASSERT_EQ(part.warnings().size(), 1u);
  EXPECT_EQ(part.warnings()[0],
            "static_size:1.00 MiB (1048576 bytes) is not a whole number of HBM granules of "
            "2.00 MiB; the arena is 2.00 MiB");
  EXPECT_EQ(part.stats().reserved_bytes.all.current, static_cast<std::int64_t>(2 * MiB));
}

TEST_P(Static, ExhaustionIsAnErrorWithAdvice) {
  Allocator allocator(device(), static_arena(16 * MiB));
  void* a = allocator.allocate(12 * MiB);
  try {
    allocator.allocate(8 * MiB);
    FAIL();
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("the static arena (16.0 MiB) has 4.00 MiB free beside "
                                         "its live tensors, 4.00 MiB short of this request; "
                                         "raise static_size to 20.0 MiB at least"),
              std::string::npos)
        << e.what();
  }
  allocator.deallocate(a);
}

TEST_P(Static, FallbackUsesCachingSegmentsAndReleasesThemOnly) {
  auto sim = device();
  Allocator allocator(sim, static_arena(16 * MiB, true));
  void* a = allocator.allocate(12 * MiB);
  void* b = allocator.allocate(8 * MiB);
  EXPECT_EQ(allocator.stats().segment.all.current, 2);
  allocator.deallocate(b);
  EXPECT_GE(allocator.empty_cache(), 8 * MiB);  // the fallback segment, not the arena
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(16 * MiB));
  testing::expect_consistent(allocator, {{a, 12 * MiB}});
  allocator.deallocate(a);
}

TEST_P(Static, NeedsAnArenaSizeThatFits) {
  EXPECT_THROW(Allocator(device(), static_arena(0)), ConfigError);
  auto sim = device();
  EXPECT_THROW(Allocator(sim, static_arena(4 * GiB)), OutOfMemory);
  EXPECT_EQ(sim->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST_P(Static, NamedPoolsGetAnArenaOfTheirQuota) {
  Allocator allocator(device(), static_arena(16 * MiB));
  EXPECT_THROW(allocator.create_pool("unsized"), ConfigError);
  allocator.create_pool("model_b", 32 * MiB);
  PoolScope scope(allocator, "model_b");
  void* p = allocator.allocate(30 * MiB);
  EXPECT_THROW(allocator.allocate(4 * MiB), OutOfMemory);
  allocator.deallocate(p);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(48 * MiB));
}

// A pool's arena that does not fit beside the others says what they hold: "an arena of
// 10 MiB does not fit in HBM (limit 18 MiB)" read as a contradiction.
TEST_P(Static, AnArenaThatDoesNotFitBesideTheOthersSaysWhatTheyHold) {
  Allocator allocator(device(), static_arena(768 * MiB));
  try {
    allocator.create_pool("model_b", 512 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the static arena of 512 MiB for pool 'model_b' does not fit in HBM "
                           "beside the 768 MiB reserved already (pool 'default' 768 MiB) "
                           "(limit 1.00 GiB)"),
              std::string::npos)
        << message;
    // Its arena is its quota: static_size, which the advice named, sizes the default's.
    EXPECT_NE(message.find("Advice: lower the quota of pool 'model_b' or of the pools before it"),
              std::string::npos)
        << message;
  }
}

// A quota that is not whole granules gives the granules within it.
TEST_P(Static, ANamedPoolsArenaRoundsDownWithinItsQuota) {
  Allocator allocator(device(), static_arena(16 * MiB));
  const std::size_t granule = device()->tier_info(Tier::hbm).granularity_bytes;
  allocator.create_pool("model_b", 32 * MiB + 1);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current,
            static_cast<std::int64_t>(16 * MiB + 32 * MiB));
  EXPECT_THROW(allocator.create_pool("tiny", granule - 1), ConfigError);
}

INSTANTIATE_TEST_SUITE_P(Devices, Static, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
