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
  report.judged_iterations = 8;
  report.leaked_bytes = 800 * KiB;
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
  group.judged_iterations = 8;
  group.judged_bytes = 800 * KiB;
  group.recurring = true;
  report.survivors.push_back(group);
  LeakGroup untagged;
  untagged.pool = "default";
  untagged.count = 1;
  untagged.bytes = 512;
  untagged.iterations = 1;
  report.survivors.push_back(untagged);
  return report;
}

// A clean training run's last gradients (set_to_none: made again each step) survive from
// the last judged iteration into the one in progress, a group each: 43 groups of two
// lines came after "no leak". They go in the summary line with the warm-up's.
TEST(LeakReport, TheLastJudgedIterationsLoneSurvivorsAreSummedUp) {
  LeakReport report;
  report.iterations = 4;
  report.judged_iterations = 2;
  report.baseline_bytes = report.final_bytes = 128 * MiB;
  for (int layer = 0; layer < 3; ++layer) {
    LeakGroup gradient;
    gradient.tag = "ResNet.layer" + std::to_string(layer) + " (backward)";
    gradient.pool = "default";
    gradient.count = 1;
    gradient.bytes = gradient.judged_bytes = 9 * MiB;
    gradient.iterations = gradient.judged_iterations = 1;
    gradient.first_iteration = gradient.last_iteration = 3;
    report.survivors.push_back(gradient);
  }
  LeakGroup earlier = report.survivors.front();
  earlier.tag = "cache";
  earlier.first_iteration = earlier.last_iteration = 2;
  report.survivors.push_back(earlier);
  const std::string text = to_string(report);
  EXPECT_EQ(text.find("ResNet.layer"), std::string::npos) << text;
  EXPECT_NE(text.find("tag 'cache'"), std::string::npos) << "an earlier iteration's: " << text;
  EXPECT_NE(text.find("  and 3 groups, 27.0 MiB, that no judged iteration left (made in "
                      "warm-up, as weights and optimizer state are), or only the last judged one "
                      "(carried into the iteration in progress, as the last step's gradients "
                      "are)"),
            std::string::npos)
      << text;
}

TEST(LeakReport, PrintsTheSeedsLinesAndTheSurvivors) {
  const std::string text = to_string(leaking_report());
  EXPECT_NE(text.find("leak check over 10 iteration marks (iterations 0 to 10, 0 before the first "
                      "mark, 10 in progress; warm-up 1, judged 8)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("allocated after warm-up: 8.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("final allocated:         9.00 MiB (at the last iteration mark)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("growth:                  +12.5%"), std::string::npos) << text;
  EXPECT_NE(
      text.find("LEAK SUSPECTED: at least 800 KiB made after warm-up stays alive iteration after "
                "iteration (the last judged iteration counted at its group's usual amount; "
                "the groups below show all they left; threshold +10.0% of the bytes allocated "
                "after warm-up)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("tag 'kv_cache', pool 'default': 10 allocations, 1.00 MiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("made in 10 of 11 iterations (first 0, last 9)"), std::string::npos) << text;
  // Of the group's bytes, what the judged iterations left: a group holding weights besides
  // read as a leak of all of them.
  EXPECT_NE(text.find("left behind in 8 iterations after warm-up: 800 KiB of it, about 100 KiB "
                      "per iteration"),
            std::string::npos)
      << text;
  // Made before the first mark only: one line for all such groups once judged.
  EXPECT_EQ(text.find("  untagged, pool 'default'"), std::string::npos) << text;
  EXPECT_NE(text.find("  and 1 group, 512 B, that no judged iteration left (made in warm-up"),
            std::string::npos)
      << text;
  LeakReport unjudged = leaking_report();
  unjudged.judged_iterations = 1;
  const std::string listed = to_string(unjudged);
  EXPECT_NE(listed.find("  untagged, pool 'default': 1 allocation, 512 B"), std::string::npos)
      << listed;
  EXPECT_NE(listed.find("made in 1 of 11 iterations (iteration 0, before the first mark)"),
            std::string::npos)
      << listed;
  EXPECT_EQ(listed.find("growth:"), std::string::npos) << "no steady state to grow from";
  LeakReport two = leaking_report();
  two.survivors[0].iterations = 2;
  two.survivors[0].first_iteration = 3;
  two.survivors[0].last_iteration = 7;
  EXPECT_NE(to_string(two).find("made in 2 of 11 iterations (3 and 7)"), std::string::npos)
      << to_string(two);
  EXPECT_NE(text.find("      at step() (train)\n      at main (train)"), std::string::npos);
}

// Too short to judge: a 3-step resnet18 run listed about 60 groups of gradients. The ten
// largest are listed, the rest counted.
TEST(LeakReport, AnUnjudgedRunListsItsLargestGroupsAndCountsTheRest) {
  LeakReport report;
  report.iterations = 3;
  report.judged_iterations = 0;
  for (int layer = 0; layer < 14; ++layer) {
    LeakGroup gradient;
    gradient.tag = "layer" + std::to_string(layer);
    gradient.pool = "default";
    gradient.count = 1;
    gradient.bytes = static_cast<std::uint64_t>(14 - layer) * MiB;  // sorted, most first
    gradient.iterations = 1;
    report.survivors.push_back(gradient);
  }
  const std::string text = to_string(report);
  EXPECT_NE(text.find("tag 'layer9'"), std::string::npos) << text;
  EXPECT_EQ(text.find("tag 'layer10'"), std::string::npos) << text;
  EXPECT_NE(text.find("  and 4 groups more, 10.0 MiB (LeakReport::survivors lists every group)"),
            std::string::npos)
      << text;
}

TEST(LeakReport, SaysWhenThereIsNoLeakAndWhenItCannotJudge) {
  LeakReport report;
  report.iterations = 3;
  report.judged_iterations = 1;
  EXPECT_NE(to_string(report).find("verdict: not judged: the check needs two complete "
                                   "iterations after warm-up, this run had 1"),
            std::string::npos)
      << to_string(report);
  report.iterations = 5;
  report.judged_iterations = 3;
  const std::string text = to_string(report);
  EXPECT_NE(text.find("verdict: no leak"), std::string::npos) << text;
  EXPECT_NE(
      text.find("no allocation made since the detector started (or mark_baseline) is still alive"),
      std::string::npos);
}

// Recurring survivors within the threshold are not "nothing".
TEST(LeakReport, SaysWhatStaysAliveWithinTheThreshold) {
  LeakReport report = leaking_report();
  report.leaking = false;
  report.threshold = 0.20;
  const std::string text = to_string(report);
  EXPECT_NE(
      text.find("verdict: no leak above the threshold: at least 800 KiB made after warm-up stays "
                "alive iteration after iteration, within the threshold of +20.0%"),
      std::string::npos)
      << text;
}

// A leak slower than every other iteration recurs in none of the groups: the verdict
// said "nothing made after warm-up stays alive" beside +37% growth.
TEST(LeakReport, SaysWhatJudgedIterationsLeftThatDoesNotRecur) {
  LeakReport report = leaking_report();
  report.leaking = false;
  report.leaked_bytes = 0;
  report.survivors[0].recurring = false;
  report.survivors[0].judged_iterations = 3;
  report.survivors[0].bytes = 1 * MiB;  // setup and warm-up's too: not what judged ones left
  report.survivors[0].judged_bytes = 192 * KiB;
  report.unrecurring_bytes = 128 * KiB;  // less the last judged iteration's
  report.unrecurring_iterations = 2;
  const std::string text = to_string(report);
  EXPECT_NE(text.find("verdict: no leak: nothing made after warm-up stays alive iteration after "
                      "iteration; 128 KiB left by 2 of the 8 judged iterations survives (below): "
                      "too few, or too bunched, to recur"),
            std::string::npos)
      << text;
  report.unrecurring_bytes = 0;  // the last judged iteration's alone: no hint
  EXPECT_NE(to_string(report).find("verdict: no leak: nothing made after warm-up stays alive "
                                   "iteration after iteration\n"),
            std::string::npos);
}

// An inference loop under npumem.torch marks no iteration by itself: the verdict says so.
TEST(LeakReport, NotJudgedForWantOfMarksSaysHowToMarkThem) {
  LeakReport report;
  // "An optimizer step marks one under npumem.torch" held under run and planned only.
  EXPECT_NE(to_string(report).find("this run had 0 (no iteration was marked: optimizer steps mark "
                                   "them under `python3 -m npumem.torch run`, strategy:planned "
                                   "or after npumem.torch.mark_optimizer_steps(); a loop without "
                                   "one calls npumem.torch.iteration()"),
            std::string::npos)
      << to_string(report);
  report.iterations = 2;
  report.judged_iterations = 0;
  EXPECT_EQ(to_string(report).find("no iteration was marked"), std::string::npos);
}

TEST(LeakReport, GrowthFromNothingIsInfinite) {
  LeakReport report = leaking_report();
  report.baseline_bytes = 0;
  report.growth = std::numeric_limits<double>::infinity();
  EXPECT_NE(to_string(report).find("+inf% (from nothing allocated)"), std::string::npos);
}

}  // namespace
}  // namespace npumem
