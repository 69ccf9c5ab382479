#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "npumem/errors.h"
#include "npumem/monitor.h"
#include "npumem/planned_report.h"
#include "npumem/text_cell.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// The row of a metric in the summary, e.g. "| Allocated memory      | ...".
std::string row_of(const std::string& summary, const std::string& name) {
  const std::size_t start = summary.find("| " + name);
  if (start == std::string::npos) return "";
  return summary.substr(start, summary.find('\n', start) - start);
}

TEST(MemorySummary, ShowsCurrentPeakTotalsPerSplit) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  void* a = allocator.allocate(2 * MiB);
  void* b = allocator.allocate(1 * MiB);
  allocator.deallocate(a);
  const std::string summary = memory_summary(allocator);

  EXPECT_NE(summary.find("device sim:0"), std::string::npos);
  EXPECT_NE(summary.find("Cur Usage"), std::string::npos);
  // Allocated: current 1 MiB, peak 3 MiB, 3 MiB allocated in total, 2 MiB freed.
  EXPECT_EQ(row_of(summary, "Allocated memory"),
            "| Allocated memory      |   1.00 MiB |   3.00 MiB |   3.00 MiB |   2.00 MiB |");
  EXPECT_EQ(row_of(summary, "Allocations"),
            "| Allocations           |          1 |          2 |          2 |          1 |");
  for (const char* name :
       {"Active memory", "Requested memory", "Reserved memory", "Active allocs", "Segments",
        "      from large pool", "      from small pool", "      on hbm", "      on ddr"}) {
    EXPECT_FALSE(row_of(summary, name).empty()) << name;
  }
  // PyTorch's non-releasable rows: b's segment holds free blocks beside it.
  const Stats stats = allocator.stats();
  ASSERT_GT(stats.inactive_split_bytes.all.current, 0);
  EXPECT_EQ(row_of(summary, "Non-releasable memory").substr(0, 36),
            "| Non-releasable memory | " +
                pad_left(format_bytes(stats.inactive_split_bytes.all.current), 10));
  EXPECT_EQ(row_of(summary, "Non-releasable allocs").substr(0, 36),
            "| Non-releasable allocs | " +
                pad_left(std::to_string(stats.inactive_split.all.current), 10));
  allocator.deallocate(b);
}

// Under the planned strategy the summary says what the plans did, in the words of the
// planned report (memory_stats() had the figures, the summary none; then its own
// compact lines, without why no plan served), each line within the table's bars.
TEST(MemorySummary, ShowsThePlannedStrategysReport) {
  Config config;
  config.strategy = Strategy::planned;
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"), config);
  for (int i = 0; i < 4; ++i) {
    allocator.mark_iteration();
    void* a = allocator.allocate(2 * MiB);
    void* b = allocator.allocate(1 * MiB);
    allocator.deallocate(a);
    allocator.deallocate(b);
  }
  const std::string summary = memory_summary(allocator);
  const PlannedStats stats = allocator.planned_stats();
  EXPECT_GT(stats.hits, 0u);
  EXPECT_NE(summary.find("planned strategy"), std::string::npos) << summary;
  for (const ReportLine& line : planned_report_lines(stats, "")) {
    EXPECT_NE(summary.find("| " + line.name + ": "), std::string::npos) << line.name << summary;
  }
  EXPECT_NE(summary.find("planned requests: " + std::to_string(stats.hits) + " hits"),
            std::string::npos)
      << summary;
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.size(), 77u) << line;
  }
  EXPECT_EQ(memory_summary(Allocator(make_device("sim:hbm=64MiB,ddr=0"))).find("planned"),
            std::string::npos);
}

// With no plan serving, the summary says why, naming how the caller marks iterations.
TEST(MemorySummary, SaysWhyNoPlanServed) {
  Config config;
  config.strategy = Strategy::planned;
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"), config);
  allocator.deallocate(allocator.allocate(1 * MiB));
  const std::string summary = memory_summary(allocator, "npumem_iteration()");
  std::string joined;  // the words, whatever lines they were wrapped over
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (word != "|") joined += word + " ";
    }
  }
  EXPECT_NE(joined.find("no iterations were marked with npumem_iteration()"), std::string::npos)
      << summary;
}

TEST(MemorySummary, CountsOomsAndListsEveryPool) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  allocator.create_pool("kv_cache", 32 * MiB);
  EXPECT_THROW(allocator.allocate(128 * MiB), OutOfMemory);
  const std::string summary = memory_summary(allocator);
  EXPECT_NE(summary.find("OOMs: 1 | alloc retries: 0"), std::string::npos) << summary;
  EXPECT_NE(summary.find("pool \"default\" (quota none)"), std::string::npos);
  EXPECT_NE(summary.find("pool \"kv_cache\" (quota 32.0 MiB)"), std::string::npos) << summary;
}

TEST(MemorySummary, APinnedPoolNamesItsTier) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=64MiB"));
  allocator.create_pool("weights", 16 * MiB, Tier::ddr);
  const std::string summary = memory_summary(allocator);
  EXPECT_NE(summary.find("pool \"weights\" (quota 16.0 MiB, pinned to ddr)"), std::string::npos)
      << summary;
}

}  // namespace
}  // namespace npumem
