#include "plan_requests.h"

#include <chrono>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

plan::LayerTiming layer_timing(const LayerPlanRequest& request, const ModelFile& model) {
  plan::LayerTiming timing;
  timing.hbm_bytes_per_s = request.hbm_bytes_per_s;
  timing.input_bytes = model.input_bytes;
  return timing;
}

}  // namespace

std::unique_ptr<MemoryPlanRun> run_memory_plan(std::string_view records, const std::string& source,
                                               const plan::MemoryPlanOptions& options,
                                               bool with_offsets) {
  std::vector<plan::TensorLifetime> tensors = plan::parse_lifetime_records(records, source);
  check_some_tensor(tensors, source);
  return run_memory_plan(std::move(tensors), source, options, with_offsets);
}

void check_some_tensor(std::span<const plan::TensorLifetime> tensors, const std::string& source) {
  if (tensors.empty()) {
    throw Error(source + ": no tensor (no line '<bytes> <first_op> <last_op>') to plan");
  }
}

std::unique_ptr<MemoryPlanRun> run_memory_plan(std::vector<plan::TensorLifetime> tensors,
                                               const std::string& source,
                                               const plan::MemoryPlanOptions& options,
                                               bool with_offsets) {
  auto run = std::make_unique<MemoryPlanRun>();
  run->tensors = std::move(tensors);
  MemoryReport& report = run->report;
  const auto start = std::chrono::steady_clock::now();
  report.plan = plan::plan_memory(run->tensors, options);
  report.plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  report.records_path = source;
  report.tensors = run->tensors;
  report.alignment = options.alignment;
  report.with_offsets = with_offsets;
  return run;
}

std::unique_ptr<ShardPlanRun> run_shard_plan(std::string_view model, const std::string& source,
                                             const LayerPlanRequest& request) {
  auto run = std::make_unique<ShardPlanRun>();
  run->model = parse_model_json(model, source);
  ShardReport& report = run->report;
  report.model_path = source;
  report.model = &run->model;
  report.options.hbm_budget_bytes = request.budget_bytes;
  report.options.load_bytes_per_s = request.load_bytes_per_s;
  report.options.timing = layer_timing(request, run->model);
  report.plan = plan::plan_shards(run->model.layers, report.options);
  report.fewest = plan::simulate_shards(
      run->model.layers, plan::fewest_shard_starts(run->model.layers, report.options),
      report.options);
  return run;
}

std::unique_ptr<RecomputePlanRun> run_recompute_plan(std::string_view model,
                                                     const std::string& source,
                                                     const LayerPlanRequest& request) {
  auto run = std::make_unique<RecomputePlanRun>();
  run->model = parse_model_json(model, source);
  RecomputeReport& report = run->report;
  plan::RecomputeOptions options;
  options.activation_budget_bytes = request.budget_bytes;
  options.timing = layer_timing(request, run->model);
  report.model_path = source;
  report.model = &run->model;
  report.budget_bytes = request.budget_bytes;
  report.plan = plan::plan_recompute(run->model.layers, options);
  report.keep_all = plan::evaluate_checkpoints(
      run->model.layers, std::vector<bool>(run->model.layers.size(), true), options.timing);
  report.sqrt_n = plan::sqrt_n_checkpoints(run->model.layers, options.timing);
  return run;
}

}  // namespace npumem::cli
