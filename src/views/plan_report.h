// What `npumem plan` prints: each plan as text for people and as JSON for machines.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "npumem/plan.h"
#include "plan_model_json.h"

namespace npumem::cli {

// Tensors a model keeps outside the planned arena (an ONNX model's weights and inputs).
struct OutsideArena {
  std::string kind;  // "weights", "inputs"
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;
  std::string why;  // "lasting", "the caller's buffers"
};

struct MemoryReport {
  std::string records_path;
  std::span<const plan::TensorLifetime> tensors;
  std::uint64_t alignment = 64;
  plan::MemoryPlan plan;
  double plan_ms = 0;
  bool with_offsets = false;  // add each tensor's offset
  std::optional<std::uint64_t> budget_bytes;
  std::vector<OutsideArena> outside_arena;
};

struct ShardReport {
  std::string model_path;
  const ModelFile* model = nullptr;
  plan::ShardOptions options;
  plan::ShardPlan plan;
  plan::ShardPlan fewest;  // the fewest-shards baseline
};

struct RecomputeReport {
  std::string model_path;
  const ModelFile* model = nullptr;
  std::uint64_t budget_bytes = 0;
  plan::RecomputePlan plan;
  plan::RecomputePlan keep_all;  // no recompute
  plan::RecomputePlan sqrt_n;    // Chen's rule
};

nlohmann::json memory_report_json(const MemoryReport& report);
std::string memory_report_text(const MemoryReport& report);
nlohmann::json shard_report_json(const ShardReport& report);
std::string shard_report_text(const ShardReport& report);
nlohmann::json recompute_report_json(const RecomputeReport& report);
std::string recompute_report_text(const RecomputeReport& report);

}  // namespace npumem::cli
