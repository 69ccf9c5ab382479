#include "npumem/planned_report.h"

#include <gtest/gtest.h>

#include "npumem/units.h"

namespace npumem {
namespace {

// More shapes recur than plans are kept: the report says plans were evicted and how to keep more.
TEST(PlannedReport, EvictedPlansAreCountedWithTheLimitAndTheKeyThatRaisesIt) {
  PlannedStats stats;
  stats.iterations = 30;
  stats.plans_learned = 18;
  stats.plans_evicted = 10;
  stats.max_plans = 8;
  stats.plans.resize(8);
  for (PlanInfo& plan : stats.plans) plan.iterations_served = 1;
  stats.plans_relearned_after_eviction = 6;  // shapes that recur
  const std::string report = planned_report(stats, "`i` lines");
  EXPECT_NE(report.find("18 (8 kept), arena 0 B now; 10 plans evicted (at most 8 are kept, the "
                        "least recently used goes; 6 learned again after eviction)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("advice            more shapes recur than the 8 plans kept (6 plans "
                        "learned again after eviction): raise planned_max_plans"),
            std::string::npos)
      << report;
  stats.plans_relearned_after_eviction = 0;  // shapes that did not come back
  EXPECT_EQ(planned_report(stats, "`i` lines").find("planned_max_plans"), std::string::npos);
  stats.plans_evicted = 0;
  EXPECT_EQ(planned_report(stats, "`i` lines").find("evicted"), std::string::npos);
}

// A request of the plan's size whose place a tensor of the iteration before still held:
// the report says so, not that the request differed from the plan.
TEST(PlannedReport, AMissWhosePlaceWasTakenSaysSo) {
  PlannedStats stats;
  stats.iterations = 6;
  stats.plans_learned = 1;
  PlanInfo plan;
  plan.requests = plan.planned_requests = 40;
  plan.key = 64;
  plan.iterations_served = 1;
  plan.iterations_left = 2;
  plan.last_miss = {true, 17, 1 * MiB, 1 * MiB, true};
  stats.plans = {plan};
  const std::string report = planned_report(stats, "`i` lines");
  EXPECT_NE(report.find("the last that missed it first missed at request 17, of the plan's size "
                        "(1.00 MiB), whose planned place a tensor still held"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("where the plan has"), std::string::npos) << report;
}

PlannedStats served_stats() {
  PlannedStats stats;
  stats.iterations = 4;
  stats.plans_learned = 2;
  stats.arena_bytes = 10 * MiB;
  stats.hits = 1234;
  stats.hit_bytes = 3 * GiB;
  stats.fallbacks = 300;
  stats.learning = 8;
  stats.lasting = 1;
  stats.first_served_iteration = 2;
  stats.steady_peak_reserved_bytes = 1010;
  stats.steady_peak_requested_bytes = 1000;
  PlanInfo keyed;
  keyed.requests = 12;
  keyed.planned_requests = 10;
  keyed.arena_bytes = 10 * MiB;
  keyed.lower_bound_bytes = 9 * MiB;
  keyed.iterations_served = 3;
  keyed.key = 7;
  keyed.hole_requests = 2;
  PlanInfo declined;
  declined.requests = 5;
  declined.planned_requests = 5;
  declined.arena_bytes = 4 * MiB;
  declined.declined = true;
  declined.fallback_peak_reserved_bytes = 6 * MiB;
  declined.declined_reserved_bytes = 7 * MiB;
  stats.plans = {keyed, declined};
  return stats;
}

// The arena is the serving plan's; a larger kept plan's (not a declined one's) is named
// beside it. Requests in iterations of declined plans are counted apart from learning.
TEST(PlannedReport, NamesTheLargestArenaAndTheRequestsOfDeclinedPlans) {
  PlannedStats stats = served_stats();
  stats.arena_bytes = 0;
  stats.plans[1].arena_bytes = 40 * MiB;
  stats.declined = 5;
  stats.declined_bytes = 5 * MiB;
  const std::vector<ReportLine> lines = planned_report_lines(stats, "`i` lines");
  EXPECT_EQ(lines[0].value, "2 (2 kept), arena 0 B now (the largest plan not declined: 10.0 MiB)");
  EXPECT_NE(lines[1].value.find("8 while learning, 5 in iterations of declined plans (5.00 MiB), "),
            std::string::npos)
      << lines[1].value;
}

// More plans learned than kept, none evicted: the difference was learned again over a
// plan of its shape, which the line says (a trial's one shape read "2 (1 kept)").
TEST(PlannedReport, SaysWhenAPlanWasLearnedAgain) {
  PlannedStats stats = served_stats();
  stats.plans_learned = 3;
  EXPECT_EQ(planned_report_lines(stats, "`i` lines")[0].value,
            "3 (2 kept), arena 10.0 MiB now; 1 replaced a plan of its shape (learned again from "
            "a later iteration)");
}

TEST(PlannedReport, NamesEachFigureAndEachPlan) {
  const std::vector<ReportLine> lines = planned_report_lines(served_stats(), "`i` lines");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].name, "plans learned");
  EXPECT_EQ(lines[0].value, "2 (2 kept), arena 10.0 MiB now");
  EXPECT_EQ(lines[1].value.substr(0, 57),
            "1,234 hits (3.00 GiB; 80.0% of the requests), 300 fallbac");
  EXPECT_EQ(lines[2].name, "steady overhead");
  EXPECT_EQ(lines[2].value.substr(0, 5), "1.010");
  EXPECT_NE(lines[2].value.find("from iteration 2"), std::string::npos) << lines[2].value;
  EXPECT_EQ(lines[3].name, "plan 0 (key 7)");
  EXPECT_EQ(lines[3].value,
            "10 of 12 requests (2 in the fallback's free space, beside what lasts), arena "
            "10.0 MiB, lower bound 9.00 MiB, served 3 iterations");
  EXPECT_EQ(lines[4].name, "plan 1");
  EXPECT_NE(
      lines[4].value.find("declined: its arena beside what the fallback held would "
                          "reserve at least 7.00 MiB, above the fallback's reserved peak in the "
                          "iteration it was learned from, 6.00 MiB"),
      std::string::npos)
      << lines[4].value;
}

// Device calls after the arena: how many were the arenas' and how many the fallback's.
TEST(PlannedReport, SplitsTheDeviceCallsAfterTheArena) {
  PlannedStats stats = served_stats();
  stats.device_calls_after_arena = 250;
  stats.arena_device_calls = 60;
  EXPECT_NE(planned_report_lines(stats, "`i` lines")[2].value.find(
                "250 device calls after the arena (60 for arenas as plans changed"),
            std::string::npos)
      << planned_report_lines(stats, "`i` lines")[2].value;
}

// Iterations that began on a plan and left it: the report says at which request and how.
TEST(PlannedReport, APlanLeftSaysWhichRequestDiffered) {
  PlannedStats stats = served_stats();
  stats.plans[0].iterations_left = 2;
  stats.plans[0].last_miss = {true, 37, 2 * MiB, 1536 * KiB};
  const std::string line = planned_report_lines(stats, "`i` lines")[3].value;
  EXPECT_NE(line.find("2 iterations began on it and left it; the last that missed it first "
                      "differed at request 37: 2.00 MiB where the plan has 1.50 MiB"),
            std::string::npos)
      << line;
  stats.plans[0].last_miss = {true, 12, 512, 0};
  EXPECT_NE(planned_report_lines(stats, "`i` lines")[3].value.find(
                "request 12: 512 B, past the plan's requests"),
            std::string::npos);
}

// Random sequence lengths, unkeyed: plans learned and never served said with the way out.
TEST(PlannedReport, AdvisesBucketsAndKeysWhenShapesSeldomRepeat) {
  PlannedStats stats = served_stats();
  PlanInfo unserved;
  unserved.requests = 7;
  stats.plans = {unserved, unserved, stats.plans[0]};
  stats.iterations_not_learned = 3;
  const std::vector<ReportLine> lines = planned_report_lines(stats, "`i` lines");
  ASSERT_EQ(lines.back().name, "advice");
  EXPECT_NE(lines.back().value.find("the iterations' shapes seldom repeat (2 of the 2 plans kept "
                                    "never served, 3 iterations not learned): pad the size"),
            std::string::npos)
      << lines.back().value;
  EXPECT_NE(lines.back().value.find("npumem advise buckets TRACE"), std::string::npos);
  stats.plans_evicted = 5;
  stats.max_plans = 8;
  const std::string learned = planned_report_lines(stats, "`i` lines")[0].value;
  EXPECT_NE(learned.find("5 plans evicted (at most 8 are kept, the least recently used goes)"),
            std::string::npos)
      << learned;
  EXPECT_EQ(learned.find("raise planned_max_plans"), std::string::npos)
      << "more plans do not serve shapes that seldom repeat: " << learned;
  EXPECT_NE(planned_report_lines(served_stats(), "`i` lines").back().name, "advice")
      << "plans that serve need no advice";
}

// Reserved memory comes in whole granules: the steady line says the least ratio they
// allow, so a small model's 1.07 reads as the granules' and not the plan's.
TEST(PlannedReport, SteadyLineGivesTheLeastRatioWholeGranulesAllow) {
  PlannedStats stats = served_stats();
  stats.granule_bytes = 2 * MiB;
  stats.steady_peak_requested_bytes = 9 * MiB + 318 * KiB;
  stats.steady_peak_reserved_bytes = 10 * MiB;
  ASSERT_TRUE(stats.steady_floor_ratio().has_value());
  EXPECT_DOUBLE_EQ(*stats.steady_floor_ratio(), 10.0 * 1024 / (9 * 1024 + 318));
  const std::string steady = planned_report_lines(stats, "`i` lines")[2].value;
  EXPECT_EQ(steady.substr(0, 5), "1.074") << steady;
  EXPECT_NE(steady.find("whole granules of 2.00 MiB allow 1.074 at least"), std::string::npos)
      << steady;
  stats.granule_bytes = 0;  // not known: no floor
  EXPECT_FALSE(stats.steady_floor_ratio().has_value());
  EXPECT_EQ(planned_report_lines(stats, "`i` lines")[2].value.find("granules"), std::string::npos);
}

// An unkeyed plan left and never served: its iterations are chosen by their first
// requests, and went on otherwise. Another shape that begins alike is told apart by keys
// (a cold trial's MLP with more tensors on odd steps); the report cannot know that is the
// cause (RMSprop's state, made in the first step, differs too), so it says both.
TEST(PlannedReport, APlanOnlyEverLeftPointsToIterationKeys) {
  PlannedStats stats = served_stats();
  PlanInfo left;
  left.requests = 72;
  left.planned_requests = 63;
  left.iterations_left = 4;
  stats.plans = {left};
  const std::string line = planned_report_lines(stats, "`i` lines")[3].value;
  EXPECT_NE(line.find("served 0 iterations; 4 iterations began on it and left it (they began "
                      "as it does, then differed; if they are other shapes, iteration keys "
                      "tell them apart)"),
            std::string::npos)
      << line;
  stats.plans[0].iterations_served = 1;
  EXPECT_EQ(planned_report_lines(stats, "`i` lines")[3].value.find("keys"), std::string::npos);
  stats.plans[0].iterations_served = 0;
  stats.plans[0].key = 3;
  EXPECT_EQ(planned_report_lines(stats, "`i` lines")[3].value.find("tell them apart"),
            std::string::npos);
}

// Declined because its iterations kept differing (a key whose iterations alternate
// sizes), not for its arena: the report gave the arena's reason, with a bound of 0 B.
TEST(PlannedReport, APlanDeclinedForItsMissesSaysSo) {
  PlannedStats stats;
  stats.iterations = 20;
  stats.plans_learned = 3;
  PlanInfo missed;
  missed.requests = missed.planned_requests = 10;
  missed.key = 7;
  missed.iterations_left = 3;
  missed.declined = missed.declined_for_misses = true;
  stats.plans = {missed};
  const std::string line = planned_report_lines(stats, "`i` lines")[3].value;
  EXPECT_NE(line.find("declined: each time it was learned again, the next iteration under its "
                      "key differed from it (other sizes or another order of requests); "
                      "iterations under one key should repeat their requests"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("fallback's reserved peak"), std::string::npos) << line;
  EXPECT_EQ(why_no_plan_served(stats, "`i` lines"),
            "its plans were declined: the iterations they served kept differing from them");
}

TEST(PlannedReport, SaysWhyNoPlanServedInTheRunsOwnTermsOfIterations) {
  PlannedStats stats;
  EXPECT_EQ(why_no_plan_served(stats, "npumem_iteration()"),
            "no iterations were marked with npumem_iteration()");
  stats.iterations = 3;
  stats.learning = 6;
  stats.plans_learned = 1;
  EXPECT_EQ(why_no_plan_served(stats, "`i` lines"),
            "no iteration repeated the requests of a learned one");
  EXPECT_EQ(why_no_plan_served(served_stats(), "`i` lines"), "");
  const std::string text = planned_report(stats, "`i` lines");
  EXPECT_NE(text.find("\n  steady overhead   none: no plan served, it ran as its fallback (no "
                      "iteration repeated"),
            std::string::npos)
      << text;
}

// Each iteration kept its output until the next had made its own: the plan's one
// planned request came while the arena awaited that output's memory, each time. The
// plan followed 6 iterations; saying no iteration repeated a learned one was false.
TEST(PlannedReport, SaysWhenEveryPlannedRequestWasDeferred) {
  PlannedStats stats;
  stats.iterations = 8;
  stats.plans_learned = 1;
  stats.learning = 4;
  stats.deferred = 6;
  stats.deferred_bytes = 24 * MiB;
  PlanInfo& plan = stats.plans.emplace_back();
  plan.requests = 2;
  plan.planned_requests = 1;
  plan.arena_bytes = plan.lower_bound_bytes = 4 * MiB;
  plan.iterations_served = 6;
  EXPECT_EQ(why_no_plan_served(stats, "`i` lines"),
            "its plan followed 6 iterations, but each request it placed came before the arena "
            "was reserved (6 deferred: the iteration before still held the memory the arena "
            "waits for), so the fallback served them");
}

TEST(PlannedReport, LinesShareOneValueColumn) {
  const std::string text = planned_report(served_stats(), "`i` lines");
  EXPECT_TRUE(text.starts_with("  plans learned     2 (2 kept)")) << text;
  EXPECT_NE(text.find("\n  plan 0 (key 7)    10 of 12"), std::string::npos) << text;
}

}  // namespace
}  // namespace npumem
