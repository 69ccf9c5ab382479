#include "plan/memory/placement_search.h"

#include <gtest/gtest.h>

#include <string>

#include "plan/memory/random_lifetimes.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

using Clock = SearchClock;

SearchClock machine_clock(false);

struct Searched {
  std::vector<TensorLifetime> tensors;
  PlanInstance instance;
  std::uint64_t lower_bound = 0;
  Placement placement;
};

// What is wrong with the searched plan; empty when it is valid.
std::string plan_problem(const Searched& searched) {
  return testing::instance_plan_problem(searched.tensors, searched.instance,
                                        searched.placement.offsets, searched.placement.arena, 64);
}

Searched search(std::vector<TensorLifetime> tensors, SearchLimits limits) {
  Searched result{std::move(tensors), {}, 0, {}};
  result.instance = make_plan_instance(result.tensors, 64);
  const std::vector<std::uint64_t> live = live_bytes_per_op(result.instance);
  result.lower_bound = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  result.placement = search_placement(result.instance, live, limits);
  return result;
}

SearchLimits iterations(std::uint64_t count, std::uint64_t seed = 1) {
  return SearchLimits{&machine_clock, Clock::time_point::max(), count, seed};
}

std::vector<TensorLifetime> dense(std::uint64_t tensors, std::uint64_t seed) {
  RandomLifetimeSpec spec;
  spec.tensors = tensors;
  spec.ops = tensors / 5;
  spec.seed = seed;
  return random_lifetimes(spec);
}

TEST(PlacementSearchTest, RunsAtMostTheIterationBudget) {
  const Searched result = search(dense(300, 1), iterations(25));
  EXPECT_LE(result.placement.search_iterations, 25u);
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, StopsAtTheLowerBound) {
  // Disjoint lifetimes: the first heuristic reaches the bound, so no search runs.
  std::vector<TensorLifetime> tensors;
  for (std::uint64_t op = 0; op < 50; ++op) tensors.push_back({64 + op, op, op});
  const Searched result = search(tensors, iterations(1000));
  EXPECT_EQ(result.placement.arena, result.lower_bound);
  EXPECT_TRUE(result.placement.proven_optimal);
  EXPECT_EQ(result.placement.search_iterations, 0u);
}

TEST(PlacementSearchTest, APassedDeadlineStillGivesAPlan) {
  const Searched result =
      search(dense(400, 2),
             SearchLimits{&machine_clock, machine_clock.now() - std::chrono::seconds(1), 1000, 1});
  EXPECT_EQ(result.placement.search_iterations, 0u);
  EXPECT_EQ(result.placement.algorithm, "skyline/longest-first+lookahead");  // the first run
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, SearchingLongerNeverMakesThePlanWorse) {
  const auto tensors = dense(400, 3);
  const Searched shorter = search(tensors, iterations(10));
  const Searched longer = search(tensors, iterations(80));
  EXPECT_LE(longer.placement.arena, shorter.placement.arena);
  EXPECT_GE(shorter.placement.arena, shorter.lower_bound);
}

TEST(PlacementSearchTest, LargeInstancesStayValidThroughTheirExtraRuns) {
  // 20,000 tensors: the size from which the pressure-weighted runs go first.
  const Searched result = search(dense(20'000, 4), iterations(0));
  EXPECT_GE(result.placement.arena, result.lower_bound);
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, OnLargeInstancesAPassedDeadlineLeavesTheNearTopRun) {
  // From 20,000 tensors the near-top lookahead's run goes first.
  const Searched result =
      search(dense(20'000, 5),
             SearchLimits{&machine_clock, machine_clock.now() - std::chrono::seconds(1), 1000, 1});
  EXPECT_EQ(result.placement.algorithm, "skyline/longest-tight-first+lookahead-near-top");
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, OnLargeInstancesEndGameStepsLowerTheBestRun) {
  // 20,000 tensors over 400 ops: the best whole run's last tensors placed again with the
  // plain lookahead and perturbed priorities end lower than any whole run.
  RandomLifetimeSpec spec;
  spec.tensors = 20'000;
  const auto tensors = random_lifetimes(spec);
  const Searched runs_only = search(tensors, iterations(0));
  const Searched with_end_game = search(tensors, iterations(20));
  EXPECT_LT(with_end_game.placement.arena, runs_only.placement.arena);
  EXPECT_EQ(with_end_game.placement.algorithm, "skyline+end-game search");
  EXPECT_LE(with_end_game.placement.search_iterations, 20u);
  EXPECT_EQ(plan_problem(with_end_game), "");
}

TEST(PlacementSearchTest, MidSizeInstancesStayValidThroughTheirNearTopRuns) {
  // 4,000 tensors: the size from which three near-top runs follow the first.
  const Searched result = search(dense(4'000, 6), iterations(0));
  EXPECT_GE(result.placement.arena, result.lower_bound);
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, FirstFitInOrderOfPressureSizeAndLengthIsACandidate) {
  RandomLifetimeSpec spec;  // 2,000 tensors over 400 ops
  spec.seed = 1;
  const Searched result = search(random_lifetimes(spec), iterations(0));
  // No skyline run, compacted or not, ends as low on this set as this order.
  EXPECT_EQ(result.placement.algorithm, "greedy-by-pressure-and-size-and-length/first-fit");
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, TheFixedOrdersReachTheBoundWithoutASearch) {
  RandomLifetimeSpec spec;
  spec.seed = 2;
  const Searched result = search(random_lifetimes(spec), iterations(0));
  // No skyline run reaches the bound on this set, compacted or not; a greedy order does.
  EXPECT_EQ(result.placement.arena, result.lower_bound);
  EXPECT_EQ(result.placement.algorithm, "greedy-by-pressure-and-size/first-fit");
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, CandidatesAndTheFinalPlanAreCompactedOnce) {
  RandomLifetimeSpec spec;
  spec.seed = 3;
  const Searched result = search(random_lifetimes(spec), iterations(0));
  // The best run's plan, compacted as a candidate, gains more from the final passes: the
  // name says compacted once.
  EXPECT_EQ(result.placement.algorithm, "skyline/tightest-first+lookahead, mirror compaction");
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, KicksOfTheFinalPhaseLowerTheBestPlan) {
  RandomLifetimeSpec spec;
  spec.seed = 1;
  const auto tensors = random_lifetimes(spec);
  const Searched without_kicks = search(tensors, iterations(0));
  // 18 search iterations (no better plan) and 2 kicks, which lower the best one.
  const Searched with_kicks = search(tensors, iterations(20));
  EXPECT_LT(with_kicks.placement.arena, without_kicks.placement.arena);
  EXPECT_EQ(with_kicks.placement.algorithm,
            "greedy-by-pressure-and-size-and-length/first-fit, mirror compaction and kicks");
  EXPECT_LE(with_kicks.placement.search_iterations, 20u);
  EXPECT_EQ(plan_problem(with_kicks), "");
}

TEST(PlacementSearchTest, ASearchWithoutFillersKeepsTheBudgetAndAValidPlan) {
  // 6,000 tensors: the search gets half the iterations (the final kicks the rest), and half
  // of its own go to the set without its smallest tensors, whose plan with them placed in
  // its gaps, compacted and kicked, is the best on this set.
  RandomLifetimeSpec spec;
  spec.tensors = 6'000;
  spec.seed = 2;
  const Searched result = search(random_lifetimes(spec), iterations(40));
  EXPECT_EQ(result.placement.algorithm,
            "search without fillers, then first fit, mirror compaction and kicks");
  EXPECT_LE(result.placement.search_iterations, 40u);
  EXPECT_GE(result.placement.arena, result.lower_bound);
  EXPECT_EQ(plan_problem(result), "");
}

TEST(PlacementSearchTest, SmallInstancesAreSolvedExactly) {
  const auto tensors = testing::random_tensors(9, 6, 5000, 21);
  const Searched result = search(tensors, iterations(0));
  EXPECT_TRUE(result.placement.proven_optimal);
  EXPECT_EQ(result.placement.search_iterations, 0u);
}

}  // namespace
}  // namespace npumem::plan
