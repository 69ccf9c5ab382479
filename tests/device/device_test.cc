// The defaults of the Device interface, seen through a minimal device.
#include "npumem/device.h"

#include <gtest/gtest.h>

namespace npumem {
namespace {

// Two tiers with fixed bandwidths and no memory calls of its own.
class FixedDevice final : public Device {
 public:
  std::string name() const override { return "fixed"; }
  TierInfo tier_info(Tier tier) const override {
    TierInfo info;
    info.tier = tier;
    info.present = true;
    info.bandwidth_bytes_per_s = tier == Tier::hbm ? 4000 : bandwidth_ddr;
    return info;
  }
  DeviceStatus allocate_segment(Tier, std::size_t, void**) override {
    return DeviceStatus::out_of_memory;
  }
  void free_segment(Tier, void*, std::size_t) override {}

  std::uint64_t bandwidth_ddr = 1000;
};

TEST(Device, NamesOfTiersAndStatuses) {
  EXPECT_EQ(tier_name(Tier::hbm), "hbm");
  EXPECT_EQ(tier_name(Tier::ddr), "ddr");
  EXPECT_EQ(status_name(DeviceStatus::ok), "ok");
  EXPECT_EQ(status_name(DeviceStatus::out_of_memory), "out_of_memory");
  EXPECT_EQ(status_name(DeviceStatus::not_supported), "not_supported");
  EXPECT_EQ(status_name(DeviceStatus::invalid_argument), "invalid_argument");
}

TEST(Device, VirtualMemoryIsNotSupportedByDefault) {
  FixedDevice device;
  void* base = nullptr;
  PhysicalHandle chunk;
  EXPECT_FALSE(device.supports_virtual_memory());
  EXPECT_EQ(device.reserve_address(4096, &base), DeviceStatus::not_supported);
  EXPECT_EQ(device.create_physical(Tier::hbm, 4096, &chunk), DeviceStatus::not_supported);
  EXPECT_EQ(device.map(base, chunk), DeviceStatus::not_supported);
  EXPECT_EQ(device.cache_bytes(), 0U);
}

TEST(Device, TransferTimeIsBoundByTheSlowerTier) {
  FixedDevice device;
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::hbm, Tier::hbm, 8000), 2.0);
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::hbm, Tier::ddr, 8000), 8.0);
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::ddr, Tier::hbm, 8000), 8.0);
}

TEST(Device, UnknownBandwidthCostsNoTime) {
  FixedDevice device;
  device.bandwidth_ddr = 0;
  EXPECT_DOUBLE_EQ(device.transfer_seconds(Tier::hbm, Tier::ddr, 8000), 0.0);
}

TEST(Device, DefaultCopyMovesBytes) {
  FixedDevice device;
  char from[6] = "bytes";
  char to[6] = {};
  EXPECT_DOUBLE_EQ(device.copy(to, Tier::hbm, from, Tier::hbm, sizeof from), 6.0 / 4000);
  EXPECT_STREQ(to, "bytes");
  EXPECT_DOUBLE_EQ(device.copy(nullptr, Tier::hbm, from, Tier::ddr, 1000), 1.0);
}

}  // namespace
}  // namespace npumem
