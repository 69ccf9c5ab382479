#include <gtest/gtest.h>

#include <limits>

#include "npumem/leak_detector.h"
#include "npumem/units.h"

namespace npumem {
namespace {

LeakReport leaking_report() {
  LeakReport report;
  report.iterations = 10;
  report.baseline_bytes = 8 * MiB;
  report.final_bytes = 9 * MiB;
  report.growth = 0.125;
  report.threshold = 0.10;
  report.leaking = true;
  LeakGroup group;
  group.tag = "kv_cache";
  group.pool = "default";
  group.frames = {"step() (train)", "main (train)"};
  group.count = 10;
  group.bytes = 1 * MiB;
  group.requested_bytes = 1000 * KiB;
  group.iterations = 10;
  group.last_iteration = 9;
  group.recurring = true;
  report.survivors.push_back(group);
  return report;
}

TEST(LeakReport, PrintsTheSeedsLinesAndTheSurvivors) {
  const std::string text = to_string(leaking_report());
  EXPECT_NE(text.find("leak check over 10 iterations"), std::string::npos) << text;
  EXPECT_NE(text.find("baseline allocated: 8.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("final allocated:    9.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("growth:             +12.5% (threshold +10.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("LEAK SUSPECTED"), std::string::npos);
  EXPECT_NE(text.find("tag 'kv_cache', pool 'default': 10 allocations, 1.00 MiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("made in 10 of 10 iterations (0..9)"), std::string::npos) << text;
  EXPECT_NE(text.find("left behind iteration after iteration"), std::string::npos);
  EXPECT_NE(text.find("      at step() (train)\n      at main (train)"), std::string::npos);
}

TEST(LeakReport, SaysWhenThereIsNoLeak) {
  LeakReport report;
  report.iterations = 3;
  const std::string text = to_string(report);
  EXPECT_NE(text.find("verdict: no leak"), std::string::npos) << text;
  EXPECT_NE(text.find("no allocation made since the baseline is still alive"), std::string::npos);
}

TEST(LeakReport, GrowthFromNothingIsInfinite) {
  LeakReport report = leaking_report();
  report.baseline_bytes = 0;
  report.growth = std::numeric_limits<double>::infinity();
  EXPECT_NE(to_string(report).find("+inf% (from nothing allocated)"), std::string::npos);
}

}  // namespace
}  // namespace npumem
