#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

std::vector<Layer> random_layers(std::uint64_t seed, std::size_t max_count) {
  std::mt19937_64 random(seed);
  std::vector<Layer> layers(1 + random() % max_count);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    layers[i] = Layer{"l" + std::to_string(i), 0, 1 + random() % 100,
                      static_cast<double>(1 + random() % 20)};
  }
  return layers;
}

struct Cost {
  std::uint64_t peak = 0;
  double recompute = 0;
};

// Chen's model from its definition: kept bytes plus the largest run of dropped outputs.
Cost cost_of(const std::vector<Layer>& layers, std::uint64_t keep_mask) {
  Cost cost;
  std::uint64_t kept = 0;
  std::uint64_t run = 0;
  std::uint64_t largest_run = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (keep_mask >> i & 1) {
      kept += layers[i].activation_bytes;
      run = 0;
    } else {
      run += layers[i].activation_bytes;
      largest_run = std::max(largest_run, run);
      cost.recompute += *layers[i].compute_seconds;
    }
  }
  cost.peak = kept + largest_run;
  return cost;
}

struct BruteForce {
  double least_recompute = std::numeric_limits<double>::infinity();  // within budget
  std::uint64_t least_peak = std::numeric_limits<std::uint64_t>::max();
};

BruteForce brute_force(const std::vector<Layer>& layers, std::uint64_t budget) {
  BruteForce result;
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << layers.size()); ++mask) {
    const Cost cost = cost_of(layers, mask);
    result.least_peak = std::min(result.least_peak, cost.peak);
    if (cost.peak <= budget)
      result.least_recompute = std::min(result.least_recompute, cost.recompute);
  }
  return result;
}

RecomputeOptions budget_of(std::uint64_t bytes) {
  RecomputeOptions options;
  options.activation_budget_bytes = bytes;
  return options;
}

TEST(RecomputePlannerTest, MatchesBruteForceOnSmallModels) {
  std::size_t infeasible = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const std::vector<Layer> layers = random_layers(seed, 12);
    std::uint64_t total = 0;
    for (const Layer& layer : layers) total += layer.activation_bytes;
    const std::uint64_t budget = total * (2 + seed % 7) / 9;
    const BruteForce best = brute_force(layers, budget);
    if (best.least_peak > budget) {
      ++infeasible;
      try {
        plan_recompute(layers, budget_of(budget));
        ADD_FAILURE() << "seed " << seed << ": expected OutOfMemory";
      } catch (const OutOfMemory& e) {
        EXPECT_EQ(e.requested_bytes(), best.least_peak) << "seed " << seed;
      }
      continue;
    }
    const RecomputePlan plan = plan_recompute(layers, budget_of(budget));
    EXPECT_DOUBLE_EQ(plan.recompute_seconds, best.least_recompute) << "seed " << seed;
    EXPECT_LE(plan.peak_bytes, budget) << "seed " << seed;
    EXPECT_TRUE(plan.proven_optimal) << "seed " << seed;
    std::uint64_t mask = 0;
    for (std::size_t i = 0; i < plan.keep.size(); ++i) mask |= std::uint64_t{plan.keep[i]} << i;
    EXPECT_EQ(cost_of(layers, mask).peak, plan.peak_bytes) << "seed " << seed;
  }
  EXPECT_GT(infeasible, 0u);  // the budgets include some too small for any plan
}

TEST(RecomputePlannerTest, KeepsEverythingWhenItFits) {
  const std::vector<Layer> layers = random_layers(3, 30);
  const RecomputePlan plan = plan_recompute(layers, budget_of(1'000'000));
  EXPECT_EQ(plan.recompute_seconds, 0.0);
  EXPECT_TRUE(std::all_of(plan.keep.begin(), plan.keep.end(), [](bool keep) { return keep; }));
  EXPECT_TRUE(plan.proven_optimal) << "recomputing nothing cannot be beaten";
}

// The search's Pareto sets are bounded on long chains, but a plan that recomputes nothing
// is still optimal (a cold trial read "may not be optimal" keeping 51 of 51 outputs).
TEST(RecomputePlannerTest, KeepingEverythingOnALongChainIsOptimal) {
  std::vector<Layer> layers;
  for (int i = 0; i < 200; ++i) layers.push_back({"l", 0, 1 + std::uint64_t(i) * 37 % 1000, 1.0});
  const RecomputePlan plan = plan_recompute(layers, budget_of(1'000'000'000));
  EXPECT_EQ(plan.recompute_seconds, 0.0);
  EXPECT_TRUE(plan.proven_optimal);
}

TEST(RecomputePlannerTest, EvaluatesAGivenKeepSet) {
  const std::vector<Layer> layers{{"a", 0, 10, 1.0},
                                  {"b", 0, 20, 2.0},
                                  {"c", 0, 30, 3.0},
                                  {"d", 0, 40, 4.0},
                                  {"e", 0, 50, 5.0}};
  // Keep a and d: segments [b, c] (50 B) and [e] (50 B).
  const RecomputePlan plan = evaluate_checkpoints(layers, {true, false, false, true, false}, {});
  EXPECT_EQ(plan.peak_bytes, 50u + 50u);
  EXPECT_DOUBLE_EQ(plan.recompute_seconds, 10.0);
  EXPECT_DOUBLE_EQ(plan.forward_seconds, 15.0);
  EXPECT_THROW(evaluate_checkpoints(layers, {true}, {}), ConfigError);
}

TEST(RecomputePlannerTest, SqrtNKeepsEveryCeilSqrtNthOutput) {
  std::vector<Layer> layers(10, Layer{"x", 0, 8, 1.0});
  const RecomputePlan plan = sqrt_n_checkpoints(layers, {});
  // ceil(sqrt(10)) = 4: keep outputs 3 and 7; segments of 3, 3 and 2 layers.
  EXPECT_EQ(plan.keep, (std::vector<bool>{false, false, false, true, false, false, false, true,
                                          false, false}));
  EXPECT_EQ(plan.peak_bytes, 2 * 8u + 3 * 8u);
  EXPECT_DOUBLE_EQ(plan.recompute_seconds, 8.0);
}

TEST(RecomputePlannerTest, TheOptimumIsNeverSlowerThanSqrtNWithinItsPeak) {
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    const std::vector<Layer> layers = random_layers(seed, 40);
    const RecomputePlan rule = sqrt_n_checkpoints(layers, {});
    const RecomputePlan plan = plan_recompute(layers, budget_of(rule.peak_bytes));
    EXPECT_LE(plan.recompute_seconds, rule.recompute_seconds) << "seed " << seed;
    EXPECT_LE(plan.peak_bytes, rule.peak_bytes) << "seed " << seed;
  }
}

TEST(RecomputePlannerTest, ALongVariedChainIsPlannedWithinBudget) {
  // 200 layers of varied sizes: the Pareto sets outgrow their bound and are thinned.
  std::mt19937_64 random(77);
  std::vector<Layer> layers;
  for (int i = 0; i < 200; ++i) {
    layers.push_back({"l", 0, 1 + random() % 10'000, static_cast<double>(1 + random() % 100)});
  }
  const RecomputePlan rule = sqrt_n_checkpoints(layers, {});
  const RecomputePlan plan = plan_recompute(layers, budget_of(rule.peak_bytes));
  EXPECT_LE(plan.peak_bytes, rule.peak_bytes);
  EXPECT_LE(plan.recompute_seconds, rule.recompute_seconds);
  EXPECT_FALSE(plan.proven_optimal);
}

TEST(RecomputePlannerTest, NoLayers) {
  const RecomputePlan plan = plan_recompute({}, budget_of(0));
  EXPECT_TRUE(plan.keep.empty());
  EXPECT_EQ(plan.peak_bytes, 0u);
}

}  // namespace
}  // namespace npumem::plan
