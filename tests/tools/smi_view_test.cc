#include "smi_view.h"

#include <gtest/gtest.h>

#include <sstream>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

PublishedDevice device(const std::string& name, std::uint64_t hbm_reserved,
                       std::uint64_t hbm_allocated) {
  PublishedDevice published;
  published.name = name;
  published.tiers[0] = {Tier::hbm,     true,         64 * GiB,           hbm_reserved,
                        hbm_allocated, hbm_reserved, hbm_allocated + MiB};
  published.tiers[1] = {Tier::ddr, true, 128 * GiB, 0, 0, 0, 0};
  published.peak_reserved_bytes = hbm_reserved;
  published.peak_allocated_bytes = hbm_allocated + MiB;
  return published;
}

ProcessStats process(int pid, const std::string& name, std::vector<PublishedDevice> devices) {
  ProcessStats stats;
  stats.pid = pid;
  stats.process_name = name;
  stats.devices = std::move(devices);
  return stats;
}

std::vector<DeviceView> two_processes() {
  return device_views(
      {process(200, "train", {device("sim:0", 8 * GiB, 6 * GiB)}),
       process(100, "infer",
               {device("sim:0", 4 * GiB, 3 * GiB), device("sim:1", 1 * GiB, 1 * GiB)})});
}

TEST(SmiView, GroupsProcessesByDeviceAndSumsTheirUse) {
  const std::vector<DeviceView> devices = two_processes();
  ASSERT_EQ(devices.size(), 2u);
  const DeviceView& first = devices[0];
  EXPECT_EQ(first.id, 0);
  EXPECT_EQ(first.name, "sim:0");
  ASSERT_EQ(first.processes.size(), 2u);
  EXPECT_EQ(first.processes[0].pid, 100);  // by pid
  EXPECT_EQ(first.processes[1].name, "train");
  const TierView& hbm = first.tiers[0];
  EXPECT_EQ(hbm.total_bytes, 64 * GiB);
  EXPECT_EQ(hbm.used_bytes, 12 * GiB);
  EXPECT_EQ(hbm.allocated_bytes, 9 * GiB);
  EXPECT_EQ(hbm.free_bytes, 52 * GiB);
  EXPECT_DOUBLE_EQ(hbm.utilization, 12.0 / 64.0);
  EXPECT_EQ(first.processes[1].peak_allocated_bytes, 6 * GiB + MiB);
  EXPECT_EQ(devices[1].name, "sim:1");
  EXPECT_EQ(devices[1].id, 1);
}

// IDs count as people do: sim:2 before sim:10 (text order made `smi -i 1` sim:10).
TEST(SmiView, DevicesAreInTheOrderTheirNumbersCount) {
  const std::vector<DeviceView> devices = device_views(
      {process(1, "p",
               {device("sim:10", GiB, 0), device("sim:2", GiB, 0), device("sim:1", GiB, 0),
                device("acl:0", GiB, 0), device("sim:02x", GiB, 0)})});
  std::vector<std::string> names;
  for (const DeviceView& view : devices) names.push_back(view.name);
  EXPECT_EQ(names, (std::vector<std::string>{"acl:0", "sim:1", "sim:2", "sim:02x", "sim:10"}));
  // Equal by value, other names: two devices, not one.
  EXPECT_EQ(
      device_views({process(1, "p", {device("sim:2", GiB, 0), device("sim:02", GiB, 0)})}).size(),
      2u);
}

// A process that spilled: its tiers' peaks came at other times, and their sum (150 MiB)
// passed the whole device's peak (120 MiB), which is what smi shows.
TEST(SmiView, APeakIsTheWholeDevicesNotTheSumOfTheTiersPeaks) {
  PublishedDevice spilled = device("sim:0", 90 * MiB, 0);
  spilled.tiers[0].peak_allocated_bytes = 90 * MiB;
  spilled.tiers[1].peak_allocated_bytes = spilled.tiers[1].peak_reserved_bytes = 60 * MiB;
  spilled.peak_allocated_bytes = spilled.peak_reserved_bytes = 120 * MiB;
  const std::vector<DeviceView> devices = device_views({process(1, "spill", {spilled})});
  EXPECT_EQ(devices.at(0).processes.at(0).peak_allocated_bytes, 120 * MiB);
  EXPECT_EQ(devices.at(0).processes.at(0).peak_reserved_bytes, 120 * MiB);
}

// Virtual NPUs of one name made with other capacities in two processes are two
// devices (each process's sim:0 is its own); real ones of a name share capacities.
TEST(SmiView, DevicesOfOneNameWithOtherCapacitiesStayApart) {
  PublishedDevice small = device("sim:0", 900 * MiB, 900 * MiB);
  small.tiers[0].capacity_bytes = 1 * GiB;
  small.tiers[1] = {Tier::ddr, false, 0, 0, 0, 0, 0};
  const std::vector<DeviceView> devices =
      device_views({process(300, "small", {small}),
                    process(400, "default", {device("sim:0", 500 * MiB, 500 * MiB)})});
  ASSERT_EQ(devices.size(), 2u);
  for (const DeviceView& view : devices) {
    EXPECT_EQ(view.name, "sim:0");
    ASSERT_EQ(view.processes.size(), 1u);
    const bool is_small = view.processes[0].pid == 300;
    EXPECT_EQ(view.tiers[0].total_bytes, is_small ? 1 * GiB : 64 * GiB);
    EXPECT_EQ(view.tiers[0].used_bytes, is_small ? 900 * MiB : 500 * MiB);
    EXPECT_EQ(view.tiers[1].present, !is_small);
  }
  EXPECT_EQ(devices[0].id, 0);
  EXPECT_EQ(devices[1].id, 1);
}

// Every line of the table as wide as its frame.
void expect_framed(const std::string& table) {
  std::istringstream lines(table);
  std::string line;
  std::size_t width = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (width == 0) width = line.size();
    EXPECT_EQ(line.size(), width) << line;
  }
}

// A process serving two models: its pools under it, each with its quota.
std::vector<DeviceView> process_with_pools() {
  PublishedDevice published = device("sim:0", 8 * GiB, 6 * GiB);
  published.pools = {{"default", 0, 1 * GiB, 512 * MiB, 600 * MiB},
                     {"encoder", 4 * GiB, 4 * GiB, 3 * GiB, 3 * GiB + 5 * MiB},
                     {"kv", 0, 3 * GiB, 2560 * MiB, 3 * GiB}};
  published.pool_count = 5;  // two more than the page had room for
  return device_views({process(300, "serve", {published})});
}

TEST(SmiView, APoolsFiguresAreShownUnderItsProcess) {
  const std::string table = smi_table(process_with_pools(), "now");
  expect_framed(table);
  EXPECT_NE(table.find("|       |          |  pool encoder       |      4.00 GiB |       3.00 GiB"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("|       |          |  pool kv            |      3.00 GiB |       2.50 GiB"),
            std::string::npos)
      << table;
  // Whole, and in both APIs' words (a C server read Python's alone).
  EXPECT_NE(table.find("|       |          |  2 more pools (npumem.pools() / npumem_pool_info in "
                       "the process)"),
            std::string::npos)
      << table;
  EXPECT_EQ(smi_table(two_processes(), "now").find("pool"), std::string::npos)
      << "a process with the default pool alone has no pool rows";

  const std::string detail = smi_memory_detail(process_with_pools()[0]);
  // A block per pool: the colons line up with the others whatever the name.
  EXPECT_NE(detail.find("    Pool encoder\n        reserved / quota         : 4.00 GiB / 4.00 GiB"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("    Pool kv\n        reserved / quota         : 3.00 GiB / none"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("    pools not on the page        : 2"), std::string::npos) << detail;

  const nlohmann::json json = smi_json(process_with_pools());
  const auto& process = json.at("devices").at(0).at("processes").at(0);
  EXPECT_EQ(process.at("pool_count"), 5);
  ASSERT_EQ(process.at("pools").size(), 3u);
  EXPECT_EQ(process.at("pools").at(1).at("name"), "encoder");
  EXPECT_EQ(process.at("pools").at(1).at("quota_bytes"), 4 * GiB);
  EXPECT_EQ(process.at("pools").at(1).at("allocated_bytes"), 3 * GiB);
  EXPECT_EQ(process.at("pools").at(1).at("peak_allocated_bytes"), 3 * GiB + 5 * MiB);
}

TEST(SmiView, TableLooksLikeNpuSmi) {
  const std::string table = smi_table(two_processes(), "2026-11-29 17:03:04");
  expect_framed(table);
  EXPECT_NE(table.find("npumem-smi"), std::string::npos);
  EXPECT_NE(table.find("2026-11-29 17:03:04"), std::string::npos);
  EXPECT_NE(table.find("| 0     | sim:0            | hbm  |     64.0 GiB |     12.0 GiB |     "
                       "52.0 GiB |     18.8% |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| 0     | 200      | train               |      8.00 GiB |       6.00 GiB"),
            std::string::npos)
      << table;
}

// Two processes' virtual NPUs alike are one row; each holds the whole capacity, so
// their sum can pass it: the table says why, in its frame.
TEST(SmiView, ALongProcessNameIsCutToItsColumn) {
  const std::string table = smi_table(
      device_views({process(7, "python3 -m serving.models.encoder", {device("sim:0", GiB, GiB)})}),
      "now");
  expect_framed(table);
  EXPECT_NE(table.find("| python3 -m servi... |"), std::string::npos) << table;
  const nlohmann::json json = smi_json(
      device_views({process(7, "python3 -m serving.models.encoder", {device("sim:0", GiB, GiB)})}));
  EXPECT_EQ(json.at("devices").at(0).at("processes").at(0).at("name"),
            "python3 -m serving.models.encoder");
}

TEST(SmiView, UsedPastTotalOfVirtualNpusIsExplained) {
  const std::string table =
      smi_table(device_views({process(1, "a", {device("sim:0", 40 * GiB, 40 * GiB)}),
                              process(2, "b", {device("sim:0", 40 * GiB, 40 * GiB)})}),
                "now");
  EXPECT_NE(table.find("| ID 0: used passes total: 2 processes' virtual NPUs, each with this "
                       "capacity of its own"),
            std::string::npos)
      << table;
  expect_framed(table);
  EXPECT_EQ(smi_table(two_processes(), "now").find("used passes total"), std::string::npos);
}

TEST(SmiView, EmptyTableSaysSo) {
  const std::string table = smi_table({}, "now");
  EXPECT_NE(table.find("No devices in use"), std::string::npos);
  EXPECT_NE(table.find("No running processes found"), std::string::npos);
}

TEST(SmiView, MemoryDetailOfOneDevice) {
  const std::string detail = smi_memory_detail(two_processes()[0]);
  EXPECT_NE(detail.find("NPU ID                           : 0"), std::string::npos) << detail;
  EXPECT_NE(detail.find("Tier hbm"), std::string::npos);
  EXPECT_NE(detail.find("    Used (reserved)              : 12.0 GiB"), std::string::npos)
      << detail;
  EXPECT_NE(detail.find("Process 200 (train)"), std::string::npos);
}

TEST(SmiView, JsonHasDevicesTiersAndProcesses) {
  const nlohmann::json json = smi_json(two_processes());
  const auto& device = json.at("devices").at(0);
  EXPECT_EQ(device.at("name"), "sim:0");
  EXPECT_EQ(device.at("tiers").at(0).at("used_bytes"), 12 * GiB);
  EXPECT_EQ(device.at("tiers").at(1).at("tier"), "ddr");
  EXPECT_EQ(device.at("processes").at(1).at("pid"), 200);
  EXPECT_EQ(device.at("processes").at(1).at("reserved_bytes"), 8 * GiB);
  EXPECT_EQ(device.at("processes").at(1).at("tiers").size(), 2u);
}

TEST(SmiView, UnknownIdsNameTheIdsThereAre) {
  const auto devices = two_processes();
  EXPECT_EQ(device_by_id(devices, 1).name, "sim:1");
  try {
    device_by_id(devices, 5);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no device with id 5 (ids 0..1)");
  }
  EXPECT_THROW(device_by_id({}, 0), Error);
}

}  // namespace
}  // namespace npumem::cli
