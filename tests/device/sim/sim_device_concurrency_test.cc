// Two threads allocating and freeing on one device keep its accounting exact.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"

namespace npumem {
namespace {

constexpr int kRounds = 2000;

// Allocates up to `held` segments, then frees them, `kRounds` times; counts successes.
void churn(SimDevice& device, Tier tier, std::atomic<std::uint64_t>& successes) {
  std::vector<void*> held;
  for (int round = 0; round < kRounds; ++round) {
    void* ptr = nullptr;
    if (device.allocate_segment(tier, 2 * MiB, &ptr) == DeviceStatus::ok) {
      held.push_back(ptr);
      successes.fetch_add(1);
    }
    if (held.size() == 4 || round + 1 == kRounds) {
      for (void* p : held) device.free_segment(tier, p, 2 * MiB);
      held.clear();
    }
  }
}

class SimDeviceConcurrency : public ::testing::TestWithParam<const char*> {};

TEST_P(SimDeviceConcurrency, ConcurrentSegmentsKeepAccountingExact) {
  // 10 MiB of HBM: two threads holding up to 4 x 2 MiB each may be refused at times.
  SimDevice device(parse_sim_spec(std::string("sim:hbm=10MiB,ddr=64MiB,") + GetParam()));
  std::atomic<std::uint64_t> successes{0};
  std::thread first([&] { churn(device, Tier::hbm, successes); });
  std::thread second([&] { churn(device, Tier::hbm, successes); });
  first.join();
  second.join();
  const DeviceCallCounts counts = device.call_counts();
  EXPECT_EQ(counts.segment_allocs, 2U * kRounds);
  EXPECT_EQ(counts.segment_frees, successes.load());
  EXPECT_EQ(counts.capacity_failures, 2U * kRounds - successes.load());
  EXPECT_EQ(counts.invalid_calls, 0U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

TEST_P(SimDeviceConcurrency, ConcurrentChunksAndMappingsKeepAccountingExact) {
  SimDevice device(parse_sim_spec(std::string("sim:hbm=64MiB,") + GetParam()));
  auto work = [&device] {
    void* base = nullptr;
    ASSERT_EQ(device.reserve_address(8 * MiB, &base), DeviceStatus::ok);
    for (int round = 0; round < 200; ++round) {
      PhysicalHandle chunk;
      ASSERT_EQ(device.create_physical(Tier::hbm, 2 * MiB, &chunk), DeviceStatus::ok);
      void* at = static_cast<char*>(base) + (round % 4) * 2 * MiB;
      ASSERT_EQ(device.map(at, chunk), DeviceStatus::ok);
      device.unmap(at, 2 * MiB);
      device.release_physical(chunk);
    }
    device.release_address(base, 8 * MiB);
  };
  std::thread first(work);
  std::thread second(work);
  first.join();
  second.join();
  const DeviceCallCounts counts = device.call_counts();
  EXPECT_EQ(counts.creates, 400U);
  EXPECT_EQ(counts.maps, 400U);
  EXPECT_EQ(counts.invalid_calls, 0U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

INSTANTIATE_TEST_SUITE_P(Backings, SimDeviceConcurrency,
                         ::testing::Values("backing=none", "backing=host"));

}  // namespace
}  // namespace npumem
