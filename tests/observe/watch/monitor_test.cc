#include "npumem/monitor.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "npumem/text_cell.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(Monitor, SnapshotsRecordAllocatedReservedAndPeakPerTier) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=64MiB"));
  Monitor monitor(allocator);
  monitor.snapshot("start");
  void* weights = allocator.allocate(30 * MiB);
  void* activations = allocator.allocate(40 * MiB);  // does not fit HBM's remaining space
  const LabelledSnapshot loaded = monitor.snapshot("loaded");
  allocator.deallocate(activations);
  const LabelledSnapshot done = monitor.snapshot("done");

  ASSERT_EQ(monitor.snapshots().size(), 3u);
  EXPECT_EQ(monitor.snapshots()[0].label, "start");
  EXPECT_EQ(monitor.snapshots()[0].total.allocated_bytes, 0u);
  EXPECT_EQ(loaded.total.allocated_bytes, 70 * MiB);
  EXPECT_EQ(loaded.tiers[static_cast<int>(Tier::hbm)].allocated_bytes, 30 * MiB);
  EXPECT_EQ(loaded.tiers[static_cast<int>(Tier::ddr)].allocated_bytes, 40 * MiB);
  EXPECT_GE(loaded.total.reserved_bytes, 70 * MiB);
  EXPECT_EQ(done.total.allocated_bytes, 30 * MiB);
  EXPECT_EQ(done.total.peak_allocated_bytes, 70 * MiB);
  EXPECT_LE(monitor.snapshots()[0].time, done.time);
  allocator.deallocate(weights);
}

TEST(Monitor, ReportPrintsTheSeedsTable) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  Monitor monitor(allocator);
  EXPECT_EQ(monitor.report(), "no snapshots\n");
  monitor.snapshot("初始化");
  void* p = allocator.allocate(4 * MiB);
  monitor.snapshot("模型加载");
  const std::string report = monitor.report();
  EXPECT_NE(report.find("label"), std::string::npos);
  EXPECT_NE(report.find("allocated"), std::string::npos);
  EXPECT_NE(report.find("reserved"), std::string::npos);
  EXPECT_NE(report.find("peak"), std::string::npos);
  EXPECT_NE(report.find("初始化"), std::string::npos);
  // The second row: label padded to 20 columns, then allocated and reserved sizes.
  EXPECT_NE(report.find("模型加载            "), std::string::npos) << report;
  EXPECT_NE(report.find("4.00 MiB"), std::string::npos) << report;
  EXPECT_NE(report.find("20.0 MiB"), std::string::npos) << report;  // one large segment
  allocator.deallocate(p);
}

// A label's tab or newline is shown escaped, and a long label widens the column: every
// row keeps its figures in line (a cold trial's "tab\tnew\nline" broke the table).
TEST(Monitor, LabelsAreEscapedAndTheColumnFitsTheWidest) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  Monitor monitor(allocator);
  monitor.snapshot("tab\tnew\nline");
  monitor.snapshot("a label longer than twenty columns");
  monitor.snapshot("short");
  const std::string report = monitor.report();
  EXPECT_NE(report.find("tab\\x09new\\x0aline"), std::string::npos) << report;
  std::istringstream lines(report);
  std::string line;
  std::getline(lines, line);  // the title
  std::vector<std::size_t> widths;
  while (std::getline(lines, line)) widths.push_back(npumem::display_width(line));
  ASSERT_EQ(widths.size(), 5u) << report;  // header, rule, three rows: no row broken
  for (const std::size_t width : widths) EXPECT_EQ(width, widths.front()) << report;
}

TEST(Monitor, EmptyCacheAndSummaryGoThroughTheAllocator) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  Monitor monitor(allocator);
  allocator.deallocate(allocator.allocate(4 * MiB));
  EXPECT_NE(monitor.memory_summary().find("Reserved memory"), std::string::npos);
  EXPECT_EQ(monitor.empty_cache().released_bytes, 20 * MiB);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
}

}  // namespace
}  // namespace npumem
