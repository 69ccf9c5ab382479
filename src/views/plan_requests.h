// The plans of `npumem plan` made from their inputs' text: the reports that the command
// prints (text or --json) and that Python's npumem.plan returns, made in one place.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/plan.h"
#include "plan_model_json.h"
#include "plan_report.h"

namespace npumem::cli {

struct LayerPlanRequest {
  std::uint64_t budget_bytes = 0;   // HBM budget (shard) or activation budget (recompute)
  double load_bytes_per_s = 50e9;   // shard: DDR to HBM
  double hbm_bytes_per_s = 1.2e12;  // the estimate of layers without compute_ms
};

// Each report points into the inputs beside it, so these stay where they are made.
struct MemoryPlanRun {
  std::vector<plan::TensorLifetime> tensors;
  MemoryReport report;
};
struct ShardPlanRun {
  ModelFile model;
  ShardReport report;
};
struct RecomputePlanRun {
  ModelFile model;
  RecomputeReport report;
};

// Records without a tensor are a mistake (an empty export, the wrong file), as an empty
// trace is: Error naming the source.
void check_some_tensor(std::span<const plan::TensorLifetime> tensors, const std::string& source);
// records: lifetime records (plan::parse_lifetime_records); source names them in errors,
// and none is refused (check_some_tensor).
std::unique_ptr<MemoryPlanRun> run_memory_plan(std::string_view records, const std::string& source,
                                               const plan::MemoryPlanOptions& options,
                                               bool with_offsets);
// The same from lifetimes already read (e.g. from a trace); source names them.
std::unique_ptr<MemoryPlanRun> run_memory_plan(std::vector<plan::TensorLifetime> tensors,
                                               const std::string& source,
                                               const plan::MemoryPlanOptions& options,
                                               bool with_offsets);
// model: a model JSON (plan_model_json.h). The plan and the fewest-shards baseline.
std::unique_ptr<ShardPlanRun> run_shard_plan(std::string_view model, const std::string& source,
                                             const LayerPlanRequest& request);
// The plan beside keep-all and Chen's sqrt(n) rule.
std::unique_ptr<RecomputePlanRun> run_recompute_plan(std::string_view model,
                                                     const std::string& source,
                                                     const LayerPlanRequest& request);

}  // namespace npumem::cli
