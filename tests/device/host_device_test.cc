#include "device/host_device.h"

#include <gtest/gtest.h>

#include <cstring>

#include "device/os/os_memory.h"

namespace npumem {
namespace {

TEST(HostDevice, OneTierAsLargeAsTheMachine) {
  HostDevice device;
  EXPECT_EQ(device.name(), "host");
  EXPECT_TRUE(device.has_tier(Tier::hbm));
  EXPECT_FALSE(device.has_tier(Tier::ddr));
  const TierInfo hbm = device.tier_info(Tier::hbm);
  EXPECT_EQ(hbm.capacity_bytes, os::physical_memory_bytes());
  EXPECT_EQ(hbm.granularity_bytes, os::page_size());
  EXPECT_EQ(device.cache_bytes(), 0U);
  EXPECT_EQ(device.spec().backing, Backing::host);
}

TEST(HostDevice, SegmentsArePlainWritableMemory) {
  HostDevice device;
  const std::size_t bytes = 16 * os::page_size();
  void* ptr = nullptr;
  ASSERT_EQ(device.allocate_segment(Tier::hbm, bytes, &ptr), DeviceStatus::ok);
  std::memset(ptr, 0x11, bytes);
  EXPECT_EQ(static_cast<unsigned char*>(ptr)[bytes - 1], 0x11);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, bytes);
  device.free_segment(Tier::hbm, ptr, bytes);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
}

TEST(HostDevice, RefusesMoreThanTheMachineHas) {
  HostDevice device;
  const std::size_t page = os::page_size();
  const std::size_t beyond = (os::physical_memory_bytes() / page + 1) * page;
  void* ptr = nullptr;
  EXPECT_EQ(device.allocate_segment(Tier::hbm, beyond, &ptr), DeviceStatus::out_of_memory);
}

TEST(HostDevice, CopiesAreUnmodelledButReal) {
  HostDevice device;
  char from[8] = "host";
  char to[8] = {};
  EXPECT_DOUBLE_EQ(device.copy(to, Tier::hbm, from, Tier::hbm, sizeof from), 0.0);
  EXPECT_STREQ(to, "host");
}

TEST(HostDevice, HasVirtualMemory) {
  HostDevice device;
  const std::size_t page = os::page_size();
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_TRUE(device.supports_virtual_memory());
  ASSERT_EQ(device.reserve_address(4 * page, &base), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, page, &chunk), DeviceStatus::ok);
  ASSERT_EQ(device.map(base, chunk), DeviceStatus::ok);
  static_cast<char*>(base)[0] = 'h';
  device.unmap(base, page);
  device.release_physical(chunk);
  device.release_address(base, 4 * page);
  EXPECT_EQ(device.call_counts().invalid_calls, 0U);
}

}  // namespace
}  // namespace npumem
