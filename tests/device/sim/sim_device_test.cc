#include "device/sim/sim_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "device/sim/sim_spec.h"
#include "npumem/errors.h"

namespace npumem {
namespace {

SimDevice make_sim(const char* spec) {
  return SimDevice(parse_sim_spec(spec));
}

TEST(SimDevice, ReportsTheSpecsTiers) {
  SimDevice device = make_sim("sim:hbm=16GiB,ddr=32GiB,granularity=4MiB,id=2");
  EXPECT_EQ(device.name(), "sim:2");
  EXPECT_EQ(device.cache_bytes(), 8 * MiB);
  const TierInfo hbm = device.tier_info(Tier::hbm);
  EXPECT_TRUE(hbm.present);
  EXPECT_EQ(hbm.tier, Tier::hbm);
  EXPECT_EQ(hbm.capacity_bytes, 16 * GiB);
  EXPECT_EQ(hbm.used_bytes, 0U);
  EXPECT_EQ(hbm.bandwidth_bytes_per_s, 1'200'000'000'000U);
  EXPECT_EQ(hbm.granularity_bytes, 4 * MiB);
  const TierInfo ddr = device.tier_info(Tier::ddr);
  EXPECT_EQ(ddr.tier, Tier::ddr);
  EXPECT_EQ(ddr.capacity_bytes, 32 * GiB);
  EXPECT_EQ(ddr.bandwidth_bytes_per_s, 50'000'000'000U);
}

TEST(SimDevice, AbsentTierIsNotPresentAndRefusesSegments) {
  SimDevice device = make_sim("sim:ddr=0");
  EXPECT_TRUE(device.has_tier(Tier::hbm));
  EXPECT_FALSE(device.has_tier(Tier::ddr));
  void* ptr = nullptr;
  EXPECT_EQ(device.allocate_segment(Tier::ddr, 2 * MiB, &ptr), DeviceStatus::invalid_argument);
}

TEST(SimDevice, AValueOutsideTheTierEnumIsAnAbsentTier) {
  SimDevice device = make_sim("sim");
  EXPECT_FALSE(device.has_tier(static_cast<Tier>(7)));
}

TEST(SimDevice, ConstructorRejectsAnInvalidSpec) {
  SimSpec spec;
  spec.granularity = 3 * MiB;
  EXPECT_THROW(SimDevice{spec}, ConfigError);
}

TEST(SimDevice, CapacityIsEnforcedPerTier) {
  SimDevice device = make_sim("sim:hbm=8MiB,ddr=4MiB");
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 6 * MiB, &a), DeviceStatus::ok);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &b), DeviceStatus::out_of_memory);
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &b), DeviceStatus::ok);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 8 * MiB);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &c), DeviceStatus::out_of_memory);
  // A full HBM leaves DDR untouched.
  ASSERT_EQ(device.allocate_segment(Tier::ddr, 4 * MiB, &c), DeviceStatus::ok);
  EXPECT_EQ(device.tier_info(Tier::ddr).used_bytes, 4 * MiB);
  device.free_segment(Tier::hbm, a, 6 * MiB);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 2 * MiB);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 6 * MiB, &a), DeviceStatus::ok);
  EXPECT_EQ(device.call_counts().capacity_failures, 2U);
}

TEST(SimDevice, OutOfMemoryLeavesTheOutputAlone) {
  SimDevice device = make_sim("sim:hbm=2MiB");
  int marker = 0;
  void* ptr = &marker;
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &ptr), DeviceStatus::out_of_memory);
  EXPECT_EQ(ptr, &marker);
}

TEST(SimDevice, SizesMustBeNonZeroMultiplesOfTheGranularity) {
  SimDevice device = make_sim("sim:granularity=2MiB");
  void* ptr = nullptr;
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 0, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, MiB, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 3 * MiB, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, nullptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device.allocate_segment(static_cast<Tier>(7), 2 * MiB, &ptr),
            DeviceStatus::invalid_argument);
  EXPECT_EQ(device.call_counts().invalid_calls, 5U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

// The full 64 GiB HBM + 128 GiB DDR of the default device, in 1 GiB segments, on a
// machine with far less memory: unique, non-overlapping, aligned addresses.
TEST(SimDevice, BackingNoneHandsOutTheFullCapacityAsUniqueAddresses) {
  SimDevice device = make_sim("sim");
  std::vector<std::pair<std::uintptr_t, Tier>> segments;
  for (Tier tier : kAllTiers) {
    void* ptr = nullptr;
    while (device.allocate_segment(tier, GiB, &ptr) == DeviceStatus::ok) {
      segments.emplace_back(reinterpret_cast<std::uintptr_t>(ptr), tier);
    }
  }
  ASSERT_EQ(segments.size(), 192U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 64 * GiB);
  EXPECT_EQ(device.tier_info(Tier::ddr).used_bytes, 128 * GiB);
  std::sort(segments.begin(), segments.end());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i].first % (2 * MiB), 0U);
    if (i > 0) {
      EXPECT_GE(segments[i].first, segments[i - 1].first + GiB);
    }
  }
  for (const auto& [address, tier] : segments) {
    device.free_segment(tier, reinterpret_cast<void*>(address), GiB);
  }
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
  EXPECT_EQ(device.tier_info(Tier::ddr).used_bytes, 0U);
}

TEST(SimDevice, BackingNoneReusesFreedAddresses) {
  SimDevice device = make_sim("sim:hbm=8MiB,ddr=0");
  void* a = nullptr;
  void* b = nullptr;
  for (int round = 0; round < 1000; ++round) {
    ASSERT_EQ(device.allocate_segment(Tier::hbm, 8 * MiB, &a), DeviceStatus::ok);
    device.free_segment(Tier::hbm, a, 8 * MiB);
  }
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &a), DeviceStatus::ok);
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &b), DeviceStatus::ok);
  EXPECT_NE(a, b);
}

TEST(SimDevice, HostBackedSegmentsAreWritable) {
  SimDevice device = make_sim("sim:hbm=8MiB,ddr=8MiB,backing=host");
  void* hbm = nullptr;
  void* ddr = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &hbm), DeviceStatus::ok);
  ASSERT_EQ(device.allocate_segment(Tier::ddr, 4 * MiB, &ddr), DeviceStatus::ok);
  std::memset(hbm, 0x5a, 4 * MiB);
  std::memset(ddr, 0xa5, 4 * MiB);
  EXPECT_EQ(static_cast<unsigned char*>(hbm)[4 * MiB - 1], 0x5a);
  EXPECT_EQ(static_cast<unsigned char*>(ddr)[0], 0xa5);
  device.free_segment(Tier::hbm, hbm, 4 * MiB);
  device.free_segment(Tier::ddr, ddr, 4 * MiB);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

TEST(SimDevice, BadFreesAreIgnoredAndCounted) {
  SimDevice device = make_sim("sim:hbm=8MiB");
  void* ptr = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &ptr), DeviceStatus::ok);
  int unknown = 0;
  device.free_segment(Tier::hbm, &unknown, 4 * MiB);
  device.free_segment(Tier::hbm, nullptr, 4 * MiB);
  device.free_segment(Tier::hbm, ptr, 2 * MiB);  // wrong size
  device.free_segment(Tier::ddr, ptr, 4 * MiB);  // wrong tier
  EXPECT_EQ(device.call_counts().invalid_calls, 4U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 4 * MiB);
  device.free_segment(Tier::hbm, ptr, 4 * MiB);
  device.free_segment(Tier::hbm, ptr, 4 * MiB);  // twice
  EXPECT_EQ(device.call_counts().invalid_calls, 5U);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

TEST(SimDevice, CallCountsCountEveryAttempt) {
  SimDevice device = make_sim("sim:hbm=4MiB");
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &a), DeviceStatus::ok);
  EXPECT_EQ(device.allocate_segment(Tier::hbm, 4 * MiB, &b), DeviceStatus::out_of_memory);
  device.free_segment(Tier::hbm, a, 4 * MiB);
  const DeviceCallCounts counts = device.call_counts();
  EXPECT_EQ(counts.segment_allocs, 2U);
  EXPECT_EQ(counts.segment_frees, 1U);
  EXPECT_EQ(counts.capacity_failures, 1U);
  EXPECT_EQ(counts.total(), 3U);
}

TEST(SimDevice, DestructionReleasesWhatTheCallerStillHolds) {
  for (const char* spec : {"sim:hbm=64MiB,backing=host", "sim:hbm=64MiB"}) {
    SimDevice device = make_sim(spec);
    void* segment = nullptr;
    void* range = nullptr;
    PhysicalHandle chunk;
    ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &segment), DeviceStatus::ok);
    ASSERT_EQ(device.reserve_address(8 * MiB, &range), DeviceStatus::ok);
    ASSERT_EQ(device.create_physical(Tier::hbm, 2 * MiB, &chunk), DeviceStatus::ok);
    ASSERT_EQ(device.map(range, chunk), DeviceStatus::ok);
  }  // ASan's leak check and the fd table would notice anything left behind
}

TEST(SimDevice, TransferSecondsUseTheSlowerTier) {
  SimDevice device = make_sim("sim:hbm_bw=1000GB/s,ddr_bw=50GB/s");
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::hbm, Tier::hbm, 1'000'000'000), 0.001);
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::hbm, Tier::ddr, 1'000'000'000), 0.02);
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::ddr, Tier::hbm, 1'000'000'000), 0.02);
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::ddr, Tier::ddr, 0), 0.0);
}

TEST(SimDevice, HostBackedCopyMovesBytesAndReturnsTheModelledTime) {
  SimDevice device = make_sim("sim:hbm=4MiB,ddr=4MiB,hbm_bw=2MB/s,ddr_bw=1MB/s,backing=host");
  void* hbm = nullptr;
  void* ddr = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &hbm), DeviceStatus::ok);
  ASSERT_EQ(device.allocate_segment(Tier::ddr, 2 * MiB, &ddr), DeviceStatus::ok);
  std::memset(ddr, 7, 1000);
  EXPECT_DOUBLE_EQ(device.copy(hbm, Tier::hbm, ddr, Tier::ddr, 1000), 0.001);
  EXPECT_EQ(static_cast<unsigned char*>(hbm)[999], 7);
  // Overlapping ranges move like memmove.
  auto* bytes = static_cast<unsigned char*>(hbm);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(i);
  device.copy(bytes + 1, Tier::hbm, bytes, Tier::hbm, 7);
  EXPECT_EQ(bytes[7], 6);
  EXPECT_EQ(bytes[1], 0);
}

TEST(SimDevice, UnbackedCopyOnlyModelsTheTime) {
  SimDevice device = make_sim("sim:hbm_bw=1GB/s");
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &a), DeviceStatus::ok);
  ASSERT_EQ(device.allocate_segment(Tier::hbm, 2 * MiB, &b), DeviceStatus::ok);
  // There are no pages behind a and b: touching them would crash, so passing means
  // nothing was moved.
  EXPECT_DOUBLE_EQ(device.copy(a, Tier::hbm, b, Tier::hbm, 1'000'000), 0.001);
}

}  // namespace
}  // namespace npumem
