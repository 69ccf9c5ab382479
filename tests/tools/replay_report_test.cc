#include "replay_report.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "npumem/units.h"

namespace npumem::cli {
namespace {

ReplayReport sample_report() {
  ReplayReport report;
  report.trace_path = "model.trace";
  ReplayResult& result = report.result;
  result.device_name = "sim:0";
  result.events = 1234567;
  result.events_replayed = 1234567;
  result.allocations = 600000;
  result.peak_requested_bytes = 100 * MiB;
  result.stats.reserved_bytes.all.peak = 110 * MiB;
  result.stats.allocated_bytes.all.peak = 101 * MiB;
  result.stats.num_spills = 4;
  result.stats.num_reclaims = 3;
  result.stats.num_alloc_retries = 1;
  result.tiers[0] = {true, 1 * GiB, 110 * MiB, 101 * MiB};
  result.tiers[1] = {true, 2 * GiB, 0, 0};
  result.ns_per_event = 12.34;
  return report;
}

TEST(ReplayReportTest, JsonHasEveryFigureOfTheReport) {
  ReplayReport report = sample_report();
  report.min_hbm_capacity_bytes = 105 * MiB;
  const auto json = replay_report_json(report);
  EXPECT_EQ(json["events"], 1234567);
  EXPECT_EQ(json["allocations"], 600000);
  EXPECT_EQ(json["peak_requested_bytes"], 100 * MiB);
  EXPECT_EQ(json["peak_reserved_bytes"], 110 * MiB);
  EXPECT_DOUBLE_EQ(json["overhead_ratio"].get<double>(), 1.1);
  EXPECT_EQ(json["tiers"]["hbm"]["capacity_bytes"], 1 * GiB);
  EXPECT_EQ(json["tiers"]["hbm"]["peak_reserved_bytes"], 110 * MiB);
  EXPECT_EQ(json["tiers"]["hbm"]["peak_allocated_bytes"], 101 * MiB);
  EXPECT_EQ(json["tiers"]["ddr"]["capacity_bytes"], 2 * GiB);
  EXPECT_EQ(json["spills"], 4);
  EXPECT_EQ(json["reclaims"], 3);
  EXPECT_EQ(json["alloc_retries"], 1);
  EXPECT_EQ(json["ooms"], 0);
  EXPECT_DOUBLE_EQ(json["ns_per_event"].get<double>(), 12.34);
  EXPECT_EQ(json["min_hbm_capacity_bytes"], 105 * MiB);
  EXPECT_EQ(json["completed"], true);
  EXPECT_FALSE(json.contains("out_of_memory"));
  EXPECT_FALSE(json.contains("pools"));
}

TEST(ReplayReportTest, JsonCarriesTheOutOfMemoryExplanation) {
  ReplayReport report = sample_report();
  report.result.out_of_memory = "out of memory: cannot allocate";
  const auto json = replay_report_json(report);
  EXPECT_EQ(json["completed"], false);
  EXPECT_EQ(json["out_of_memory"], "out of memory: cannot allocate");
}

TEST(ReplayReportTest, TextShowsReadableFigures) {
  const std::string text = replay_report_text(sample_report());
  EXPECT_NE(text.find("model.trace on sim:0 (caching)"), std::string::npos) << text;
  EXPECT_NE(text.find("1,234,567 of 1,234,567 (the trace's 600,000 allocations"), std::string::npos)
      << text;
  EXPECT_NE(text.find("peak requested        " + format_bytes(100 * MiB)), std::string::npos)
      << text;
  EXPECT_NE(text.find("overhead ratio        1.100"), std::string::npos) << text;
  EXPECT_NE(text.find("ns per event          12.3"), std::string::npos) << text;
  EXPECT_NE(text.find("hbm     " + format_bytes(1 * GiB)), std::string::npos) << text;
  EXPECT_EQ(text.find("min HBM capacity"), std::string::npos) << text;
}

// A pool name of 16 characters or more ran into its figures ("model_a (removed)16.0 MiB").
TEST(ReplayReportTest, ThePoolTableIsAsWideAsItsLongestName) {
  ReplayReport report = sample_report();
  for (const char* name : {"default", "model_a (removed)", "a_very_long_pool_name_x"}) {
    PoolInfo pool;
    pool.name = name;
    pool.stats.requested_bytes.all.peak = 100;
    report.result.pools.push_back(pool);
  }
  const std::string text = replay_report_text(report);
  // Every row's first figure starts in one column, after a space.
  std::size_t column = 0;
  for (const char* name : {"pool ", "default ", "model_a (removed) ", "a_very_long_pool_name_x "}) {
    const std::size_t row = text.find(std::string("\n  ") + name);
    ASSERT_NE(row, std::string::npos) << name << "\n" << text;
    const std::size_t figure = text.find_first_not_of(' ', row + 3 + std::strlen(name));
    if (column == 0) column = figure - row;
    EXPECT_EQ(figure - row, column) << name << "\n" << text;
  }
}

// Reclaims before growth are routine; the line says how many met a refusal.
TEST(ReplayReportTest, ReclaimsSayHowManyMadeRoomARequestNeeded) {
  const std::string text = replay_report_text(sample_report());
  EXPECT_NE(text.find("reclaims              3 (1 made room a request needed; the rest gave "
                      "cached memory back before growing past the reserved peak)"),
            std::string::npos)
      << text;
}

TEST(ReplayReportTest, APlansLongKeyStaysApartFromItsFigures) {
  ReplayReport report = sample_report();
  report.result.strategy = Strategy::planned;
  PlanInfo plan;
  plan.requests = 2;
  plan.planned_requests = 2;
  plan.key = ~std::uint64_t{0};
  report.result.planned.plans.push_back(plan);
  const std::string text = replay_report_text(report);
  EXPECT_NE(text.find("plan 0 (key 18446744073709551615) 2 of 2 requests, arena"),
            std::string::npos)
      << text;
  // All in the fallback's free space: an arena of 0 B beside hits needs the word.
  report.result.planned.plans[0].hole_requests = 2;
  EXPECT_NE(replay_report_text(report).find(
                "2 of 2 requests (2 in the fallback's free space, beside what lasts), arena 0 B"),
            std::string::npos)
      << replay_report_text(report);
  EXPECT_EQ(replay_report_json(report)["planned"]["plans"][0]["hole_requests"], 2);
}

TEST(ReplayReportTest, PlanEvictionsAreInTheJson) {
  ReplayReport report = sample_report();
  report.result.strategy = Strategy::planned;
  report.result.planned.plans_evicted = 3;
  report.result.planned.max_plans = 8;
  const nlohmann::ordered_json json = replay_report_json(report);
  EXPECT_EQ(json["planned"]["plans_evicted"], 3);
  EXPECT_EQ(json["planned"]["max_plans"], 8);
}

}  // namespace
}  // namespace npumem::cli
