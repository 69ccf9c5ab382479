#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

struct Model {
  std::vector<Layer> layers;
  ShardOptions options;
};

Model random_model(std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Model model;
  const std::size_t count = 1 + random() % 9;
  std::uint64_t largest_need = 0;
  std::uint64_t input = 1 + random() % 50;
  model.options.timing.input_bytes = input;
  model.options.load_bytes_per_s = 100.0;
  for (std::size_t i = 0; i < count; ++i) {
    Layer layer{"l" + std::to_string(i), random() % 400, 1 + random() % 50,
                static_cast<double>(1 + random() % 8)};
    largest_need = std::max(largest_need, layer.weight_bytes + input + layer.activation_bytes);
    input = layer.activation_bytes;
    model.layers.push_back(layer);
  }
  model.options.hbm_budget_bytes = largest_need + random() % (2 * largest_need + 1);
  return model;
}

// The total time of shards from a plain simulation written for this test: each shard
// holds its weights and the largest input + output of its layers; two weight buffers.
double simulated_total(const Model& model, const std::vector<std::size_t>& starts) {
  const std::size_t shards = starts.size();
  std::vector<std::uint64_t> weights(shards, 0);
  std::vector<std::uint64_t> activations(shards, 0);
  std::vector<double> compute(shards, 0);
  for (std::size_t k = 0; k < shards; ++k) {
    const std::size_t end = k + 1 < shards ? starts[k + 1] : model.layers.size();
    for (std::size_t i = starts[k]; i < end; ++i) {
      const std::uint64_t input =
          i == 0 ? model.options.timing.input_bytes : model.layers[i - 1].activation_bytes;
      weights[k] += model.layers[i].weight_bytes;
      activations[k] = std::max(activations[k], input + model.layers[i].activation_bytes);
      compute[k] += *model.layers[i].compute_seconds;
    }
    if (weights[k] + activations[k] > model.options.hbm_budget_bytes) {
      return std::numeric_limits<double>::infinity();
    }
  }
  std::vector<double> load_end(shards);
  std::vector<double> compute_end(shards);
  for (std::size_t k = 0; k < shards; ++k) {
    const double load = static_cast<double>(weights[k]) / model.options.load_bytes_per_s;
    double load_start = 0;
    if (k > 0) {
      const bool beside =
          weights[k - 1] + activations[k - 1] + weights[k] <= model.options.hbm_budget_bytes;
      const double buffer_free = k >= 2 ? compute_end[k - 2] : 0.0;
      load_start = beside ? std::max(load_end[k - 1], buffer_free) : compute_end[k - 1];
    }
    load_end[k] = load_start + load;
    compute_end[k] = std::max(load_end[k], k > 0 ? compute_end[k - 1] : 0.0) + compute[k];
  }
  return compute_end.back();
}

// The least total over every way to cut the layers into consecutive shards.
double brute_force_best(const Model& model) {
  const std::size_t cuts = model.layers.size() - 1;
  double best = std::numeric_limits<double>::infinity();
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << cuts); ++mask) {
    std::vector<std::size_t> starts{0};
    for (std::size_t cut = 0; cut < cuts; ++cut) {
      if (mask >> cut & 1) starts.push_back(cut + 1);
    }
    best = std::min(best, simulated_total(model, starts));
  }
  return best;
}

TEST(ShardPlannerTest, MatchesBruteForceOnSmallModels) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const Model model = random_model(seed);
    const ShardPlan plan = plan_shards(model.layers, model.options);
    const double best = brute_force_best(model);
    ASSERT_NEAR(plan.total_seconds, best, 1e-9 * best) << "seed " << seed;
    std::vector<std::size_t> starts;
    for (const Shard& shard : plan.shards) starts.push_back(shard.first_layer);
    EXPECT_NEAR(simulated_total(model, starts), plan.total_seconds, 1e-9 * best);
    for (const Shard& shard : plan.shards) {
      EXPECT_LE(shard.peak_bytes, model.options.hbm_budget_bytes) << "seed " << seed;
    }
  }
}

TEST(ShardPlannerTest, NeverSlowerThanTheFewestShards) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    const Model model = random_model(seed);
    const ShardPlan plan = plan_shards(model.layers, model.options);
    const ShardPlan fewest = simulate_shards(
        model.layers, fewest_shard_starts(model.layers, model.options), model.options);
    EXPECT_LE(plan.total_seconds, fewest.total_seconds * (1 + 1e-12)) << "seed " << seed;
  }
}

TEST(ShardPlannerTest, SplitsAModelThatFitsWholeToOverlapLoading) {
  // Everything fits at once, but loading all 4 s before any compute is slower than
  // computing l0 while the rest loads.
  const std::vector<Layer> layers{{"a", 200, 1, 2.0}, {"b", 200, 1, 2.0}};
  ShardOptions options;
  options.hbm_budget_bytes = 10'000;
  options.load_bytes_per_s = 100.0;
  const ShardPlan plan = plan_shards(layers, options);
  ASSERT_EQ(plan.shards.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.total_seconds, 6.0);  // load a 2, then max(2, 2), then 2
}

// The first layer past the budget is named; the bytes asked for are the smallest budget
// that fits, the most any layer needs (they were the first layer's: a user following
// needed_bytes took three tries, 12 MiB, 13 MiB, then 22 MiB).
TEST(ShardPlannerTest, ALayerThatCannotFitIsNamedWithTheBudgetThatFits) {
  const std::vector<Layer> layers{
      {"small", 10, 1, 1.0}, {"huge", 5000, 1, 1.0}, {"larger", 7000, 2, 1.0}};
  ShardOptions options;
  options.hbm_budget_bytes = 1000;
  try {
    plan_shards(layers, options);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("'huge'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the smallest budget that fits is 6.84 KiB"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.requested_bytes(), 7003u);  // 7000 of weights, its activations and its input's
  }
  options.hbm_budget_bytes = 7003;
  EXPECT_NO_THROW(plan_shards(layers, options));
}

TEST(ShardPlannerTest, NoLayersNoShards) {
  const ShardPlan plan = plan_shards({}, ShardOptions{});
  EXPECT_TRUE(plan.shards.empty());
  EXPECT_EQ(plan.total_seconds, 0.0);
}

}  // namespace
}  // namespace npumem::plan
