#include "plan_report.h"

#include <gtest/gtest.h>

namespace npumem::cli {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PlanReportTest, MemoryReportHasTheIssuesFields) {
  const std::vector<plan::TensorLifetime> tensors{{100, 0, 1}, {64, 1, 2}};
  MemoryReport report;
  report.records_path = "m.records";
  report.tensors = tensors;
  report.plan = plan::plan_memory(tensors);
  report.plan_ms = 1.25;
  const nlohmann::json json = memory_report_json(report);
  EXPECT_EQ(json["tensors"], 2);
  EXPECT_EQ(json["lower_bound_bytes"], 192);
  EXPECT_EQ(json["naive_bytes"], 192);
  EXPECT_EQ(json["arena_bytes"], 192);
  EXPECT_DOUBLE_EQ(json["ratio"].get<double>(), 1.0);
  EXPECT_EQ(json["algorithm"], report.plan.algorithm);
  EXPECT_DOUBLE_EQ(json["plan_ms"].get<double>(), 1.25);
  EXPECT_FALSE(json.contains("offsets"));
  report.with_offsets = true;
  EXPECT_EQ(memory_report_json(report)["offsets"].size(), 2u);
  const std::string text = memory_report_text(report);
  EXPECT_TRUE(contains(text, "lower bound  192 B (192 B)")) << text;
  EXPECT_TRUE(contains(text, "1.0000 x lower bound")) << text;
  EXPECT_TRUE(contains(text, "tensor        offset")) << text;
}

// The margin is exact on both sides of the budget, past what int64 holds too.
TEST(PlanReportTest, BudgetMarginKeepsItsSignForAnyBudgetAndArena) {
  const std::vector<plan::TensorLifetime> tensors{{100, 0, 1}};
  MemoryReport report;
  report.tensors = tensors;
  report.plan = plan::plan_memory(tensors);
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  report.budget_bytes = kMax;
  nlohmann::json json = memory_report_json(report);
  EXPECT_EQ(json["fits"], true);
  ASSERT_TRUE(json["budget_margin_bytes"].is_number_unsigned()) << json["budget_margin_bytes"];
  EXPECT_EQ(json["budget_margin_bytes"].get<std::uint64_t>(), kMax - 128);
  report.budget_bytes = 100;
  json = memory_report_json(report);
  EXPECT_EQ(json["fits"], false);
  EXPECT_EQ(json["budget_margin_bytes"].get<std::int64_t>(), -28);
  report.plan.arena_bytes = kMax - 63;  // an arena past int64, over a budget of 1 GiB
  report.budget_bytes = std::uint64_t{1} << 30;
  json = memory_report_json(report);
  EXPECT_EQ(json["fits"], false);
  EXPECT_LT(json["budget_margin_bytes"].get<double>(), -1.8e19);
}

ModelFile two_layer_model() {
  ModelFile model;
  model.name = "tiny";
  model.layers = {{"a", 200, 1, 0.002}, {"b", 200, 1, 0.002}};
  return model;
}

TEST(PlanReportTest, ShardReportListsShardsAndTheBaseline) {
  const ModelFile model = two_layer_model();
  ShardReport report;
  report.model_path = "m.json";
  report.model = &model;
  report.options.hbm_budget_bytes = 1000;
  report.options.load_bytes_per_s = 100'000.0;
  report.plan = plan::plan_shards(model.layers, report.options);
  report.fewest = plan::simulate_shards(model.layers, std::vector<std::size_t>{0}, report.options);
  const nlohmann::json json = shard_report_json(report);
  EXPECT_EQ(json["shard_count"], 2);
  ASSERT_EQ(json["shards"].size(), 2u);
  EXPECT_EQ(json["shards"][1]["first_name"], "b");
  EXPECT_DOUBLE_EQ(json["total_ms"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(json["fewest_shards"]["total_ms"].get<double>(), 8.0);
  const std::string text = shard_report_text(report);
  EXPECT_TRUE(contains(text, "m.json (tiny, 2 layers)")) << text;
  EXPECT_TRUE(contains(text, "fewest shards (1): 8.000 ms")) << text;
}

TEST(PlanReportTest, AOneLayerModelIsOneLayer) {
  ModelFile model = two_layer_model();
  model.layers.pop_back();
  ShardReport report;
  report.model_path = "m.json";
  report.model = &model;
  report.options.hbm_budget_bytes = 1000;
  report.plan = plan::plan_shards(model.layers, report.options);
  report.fewest = report.plan;
  const std::string text = shard_report_text(report);
  EXPECT_TRUE(contains(text, "m.json (tiny, 1 layer)")) << text;
}

TEST(PlanReportTest, RecomputeReportComparesWithKeepAllAndSqrtN) {
  ModelFile model;
  model.layers = {{"a", 0, 10, 0.001}, {"b", 0, 10, 0.1}, {"c", 0, 10, 0.001}};
  RecomputeReport report;
  report.model_path = "m.json";
  report.model = &model;
  report.budget_bytes = 20;
  plan::RecomputeOptions options;
  options.activation_budget_bytes = 20;
  report.plan = plan::plan_recompute(model.layers, options);
  report.keep_all = plan::evaluate_checkpoints(model.layers, {true, true, true}, {});
  report.sqrt_n = plan::sqrt_n_checkpoints(model.layers, {});
  const nlohmann::json json = recompute_report_json(report);
  EXPECT_EQ(json["peak_bytes"], 20);
  EXPECT_EQ(json["kept_layers"], nlohmann::json::array({"b"}));
  EXPECT_FALSE(json["keep_all"]["fits"].get<bool>());
  EXPECT_TRUE(json["proven_optimal"].get<bool>());
  const std::string text = recompute_report_text(report);
  EXPECT_TRUE(contains(text, "kept: b")) << text;
  EXPECT_TRUE(contains(text, "over budget")) << text;
}

}  // namespace
}  // namespace npumem::cli
