// Fault injection on the virtual NPU: injected failures look like a real driver's
// out_of_memory, hit only the chosen calls, and repeat exactly for a seed.
#include <gtest/gtest.h>

#include <vector>

#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"

namespace npumem {
namespace {

std::vector<DeviceStatus> allocate_and_free(SimDevice& device, int count) {
  std::vector<DeviceStatus> statuses;
  for (int i = 0; i < count; ++i) {
    void* ptr = nullptr;
    statuses.push_back(device.allocate_segment(Tier::hbm, 2 * MiB, &ptr));
    if (statuses.back() == DeviceStatus::ok) device.free_segment(Tier::hbm, ptr, 2 * MiB);
  }
  return statuses;
}

TEST(SimDeviceFaults, EveryNthSegmentAllocationFails) {
  SimDevice device(parse_sim_spec("sim:fail_every=3"));
  const std::vector<DeviceStatus> statuses = allocate_and_free(device, 9);
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_EQ(statuses[i], (i + 1) % 3 == 0 ? DeviceStatus::out_of_memory : DeviceStatus::ok)
        << "call " << i + 1;
  }
  const DeviceCallCounts counts = device.call_counts();
  EXPECT_EQ(counts.injected_failures, 3U);
  EXPECT_EQ(counts.capacity_failures, 0U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

// The device's word on its last refusal, which an out-of-memory report prints and which
// keeps its advice from blaming fragmentation for a fault; none after a success.
TEST(SimDeviceFaults, TheLastRefusalIsNamedUntilASuccess) {
  SimDevice device(parse_sim_spec("sim:hbm=4MiB,ddr=0,fail_every=2"));
  void* ptr = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &ptr), DeviceStatus::ok);
  EXPECT_EQ(device.last_error(), "");
  void* refused = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &refused), DeviceStatus::out_of_memory);
  EXPECT_EQ(device.last_error(),
            "a fault injected by the device spec (fail_every / fail_prob) refused 2.00 MiB of hbm");
  void* second = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &second), DeviceStatus::ok);
  EXPECT_EQ(device.last_error(), "");
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &refused), DeviceStatus::out_of_memory);
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &refused), DeviceStatus::out_of_memory);
  EXPECT_EQ(device.last_error(), "hbm is full: 4.00 MiB of 4.00 MiB in use, 2.00 MiB asked");
  device.free_segment(Tier::hbm, ptr, 2 * MiB);
  device.free_segment(Tier::hbm, second, 2 * MiB);
}

TEST(SimDeviceFaults, ProbabilisticFailuresRepeatForASeed) {
  SimDevice a(parse_sim_spec("sim:fail_prob=0.5,seed=7"));
  SimDevice b(parse_sim_spec("sim:fail_prob=0.5,seed=7"));
  SimDevice c(parse_sim_spec("sim:fail_prob=0.5,seed=8"));
  const std::vector<DeviceStatus> first = allocate_and_free(a, 200);
  EXPECT_EQ(first, allocate_and_free(b, 200));
  EXPECT_NE(first, allocate_and_free(c, 200));
  const auto failures = a.call_counts().injected_failures;
  EXPECT_GT(failures, 50U);
  EXPECT_LT(failures, 150U);
}

TEST(SimDeviceFaults, OnlyTheChosenCallsFail) {
  SimDevice device(parse_sim_spec("sim:fail_every=1,fail_ops=map"));
  void* segment = nullptr;
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &segment), DeviceStatus::ok);
  ASSERT_EQ(device.reserve_address(2 * MiB, &base), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, 2 * MiB, &chunk), DeviceStatus::ok);
  EXPECT_EQ(device.map(base, chunk), DeviceStatus::out_of_memory);
  EXPECT_EQ(device.call_counts().injected_failures, 1U);
  // The failed map left nothing mapped: unmapping the range finds no mapping to cut.
  device.unmap(base, 2 * MiB);
  EXPECT_EQ(device.call_counts().invalid_calls, 0U);
  device.release_physical(chunk);
  device.release_address(base, 2 * MiB);
  device.free_segment(Tier::hbm, segment, 2 * MiB);
}

TEST(SimDeviceFaults, InjectedCreateFailureChargesNothing) {
  SimDevice device(parse_sim_spec("sim:fail_every=1,fail_ops=create+segment"));
  PhysicalHandle chunk;
  void* segment = nullptr;
  EXPECT_EQ(device.create_physical(Tier::ddr, 2 * MiB, &chunk), DeviceStatus::out_of_memory);
  EXPECT_FALSE(chunk);
  EXPECT_EQ(device.allocate_segment(Tier::ddr, 2 * MiB, &segment), DeviceStatus::out_of_memory);
  EXPECT_EQ(device.tier_info(Tier::ddr).used_bytes, 0U);
  EXPECT_EQ(device.call_counts().injected_failures, 2U);
}

TEST(SimDeviceFaults, InvalidCallsDoNotConsumeTheCount) {
  SimDevice device(parse_sim_spec("sim:fail_every=2"));
  void* ptr = nullptr;
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 1, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &ptr), DeviceStatus::ok);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &ptr), DeviceStatus::out_of_memory);
}

TEST(SimDeviceFaults, SetFaultsArmsTheInjectorLater) {
  SimDevice device(parse_sim_spec("sim"));
  EXPECT_EQ(allocate_and_free(device, 5), std::vector<DeviceStatus>(5, DeviceStatus::ok));
  device.set_faults(FaultSpec{.every = 2});
  EXPECT_EQ(allocate_and_free(device, 2),
            (std::vector<DeviceStatus>{DeviceStatus::ok, DeviceStatus::out_of_memory}));
  device.set_faults(FaultSpec{});
  EXPECT_EQ(allocate_and_free(device, 4), std::vector<DeviceStatus>(4, DeviceStatus::ok));
}

}  // namespace
}  // namespace npumem
