#include "mon_view.h"

#include <gtest/gtest.h>

#include "npumem/units.h"

namespace npumem::cli {
namespace {

std::vector<DeviceView> one_device(double used_fraction, std::uint64_t hbm_bytes = 64 * GiB) {
  ProcessStats process;
  process.pid = 42;
  process.process_name = "train";
  PublishedDevice device;
  device.name = "sim:0";
  const auto used = static_cast<std::uint64_t>(used_fraction * static_cast<double>(hbm_bytes));
  device.tiers[0] = {Tier::hbm, true, hbm_bytes, used, used / 2, used, used};
  device.tiers[1] = {Tier::ddr, false, 0, 0, 0, 0, 0};
  process.devices.push_back(device);
  return device_views({process});
}

TEST(MonView, BarsFillByFraction) {
  EXPECT_EQ(usage_bar(0.0, 10), "[..........]");
  EXPECT_EQ(usage_bar(0.5, 10), "[#####.....]");
  EXPECT_EQ(usage_bar(1.7, 4), "[####]");
}

TEST(MonView, SparklineScalesFromLowToFullBlock) {
  EXPECT_EQ(sparkline({0.0, 0.5, 1.0}), "\u2581\u2585\u2588");
  EXPECT_EQ(sparkline({}), "");
}

TEST(MonView, HistoryKeepsTheLastSamplesPerDeviceTier) {
  UsageHistory history(2);
  history.add(one_device(0.25));
  history.add(one_device(0.5));
  history.add(one_device(0.75));
  const DeviceView device = one_device(0).at(0);
  const auto& samples = history.of(device, Tier::hbm);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[0], 0.5);
  EXPECT_DOUBLE_EQ(samples[1], 0.75);
  EXPECT_TRUE(history.of(device, Tier::ddr).empty());  // absent tier
}

// Two processes' sim:0 of other sizes are two devices: their samples were interleaved.
TEST(MonView, DevicesOfOneNameWithOtherCapacitiesKeepTheirOwnHistory) {
  UsageHistory history(10);
  history.add(one_device(0.25));
  history.add(one_device(0.5, 16 * GiB));
  EXPECT_EQ(history.of(one_device(0).at(0), Tier::hbm), std::deque<double>{0.25});
  EXPECT_EQ(history.of(one_device(0, 16 * GiB).at(0), Tier::hbm), std::deque<double>{0.5});
}

TEST(MonView, ScreenShowsBarsSparklineAndProcesses) {
  UsageHistory history(60);
  history.add(one_device(0.5));
  const std::string screen = mon_screen(one_device(0.5), history, "12:00:00", 1.0);
  EXPECT_NE(screen.find("device 0  sim:0   processes 1"), std::string::npos) << screen;
  EXPECT_NE(screen.find("hbm  [" + std::string(15, '#') + std::string(15, '.') + "]  50.0%"),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("\u2585"), std::string::npos);
  EXPECT_NE(screen.find("pid 42"), std::string::npos);
  EXPECT_EQ(screen.find("ddr"), std::string::npos);
  EXPECT_NE(mon_screen({}, history, "12:00:00", 1.0).find("no process is using npumem"),
            std::string::npos);
}

TEST(MonView, APoolsFiguresFollowItsProcess) {
  ProcessStats process;
  process.pid = 7;
  process.process_name = "serve";
  PublishedDevice device;
  device.name = "sim:0";
  device.tiers[0] = {Tier::hbm, true, 64 * GiB, 5 * GiB, 4 * GiB, 5 * GiB, 4 * GiB};
  device.pools = {{"default", 0, 1 * GiB, 1 * GiB, 1 * GiB},
                  {"encoder", 4 * GiB, 4 * GiB, 3 * GiB, 3 * GiB}};
  device.pool_count = 2;
  process.devices.push_back(device);
  const std::string screen = mon_screen(device_views({process}), UsageHistory(1), "now", 1.0);
  const auto line_of = [&](const std::string& start) {
    const std::size_t at = screen.find(start);
    return at == std::string::npos ? std::string() : screen.substr(at, screen.find('\n', at) - at);
  };
  const std::string process_line = line_of("    pid 7");
  const std::string encoder = line_of("      pool encoder ");
  EXPECT_NE(
      encoder.find("reserved   4.00 GiB  allocated   3.00 GiB  peak   3.00 GiB  quota 4.00 GiB"),
      std::string::npos)
      << screen;
  EXPECT_EQ(encoder.find("reserved"), process_line.find("reserved")) << "columns line up";
  EXPECT_NE(line_of("      pool default ").find("quota none"), std::string::npos) << screen;
  EXPECT_EQ(mon_screen(one_device(0.5), UsageHistory(1), "now", 1.0).find("pool"),
            std::string::npos);
}

TEST(MonView, LineIsOneLinePerRefresh) {
  const std::string line = mon_line(one_device(0.25), "12:00:00");
  EXPECT_EQ(line, "12:00:00  device 0 sim:0 procs 1 hbm 16.0 GiB/64.0 GiB  25.0%\n");
  EXPECT_EQ(mon_line({}, "12:00:00"), "12:00:00  no process is using npumem\n");
}

}  // namespace
}  // namespace npumem::cli
