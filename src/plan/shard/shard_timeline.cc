// The timeline of given shards, and the fewest-shards baseline.
//
// One copy engine loads weights from DDR into two HBM buffers. Shard k loads once the
// engine is free and its buffer (shard k-2's) is released, and computes once it is loaded
// and shard k-1 is done. When shard k's weights do not fit beside shard k-1 (its weights
// and activations), shard k loads only after shard k-1 ends.
#include <algorithm>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "npumem/units.h"
#include "plan/memory/plan_instance.h"
#include "plan/shard/shard_costs.h"

namespace npumem::plan {
namespace {

void check_starts(std::span<const std::size_t> starts, std::size_t layer_count) {
  if (layer_count == 0 && starts.empty()) return;
  if (starts.empty() || starts.front() != 0) {
    throw ConfigError("the first shard must start at layer 0");
  }
  for (std::size_t k = 0; k < starts.size(); ++k) {
    if (starts[k] >= layer_count || (k > 0 && starts[k] <= starts[k - 1])) {
      throw ConfigError("shard starts must rise strictly and stay below the layer count " +
                        std::to_string(layer_count) + ", got " + std::to_string(starts[k]));
    }
  }
}

void check_shard_fits(const ShardCosts& costs, const Shard& shard, std::size_t index,
                      std::uint64_t budget) {
  if (costs.fits(shard.first_layer, shard.end_layer)) return;
  const std::uint64_t needed = costs.resident_bytes(shard.first_layer, shard.end_layer);
  throw OutOfMemory("shard " + std::to_string(index) + " (layers " +
                        std::to_string(shard.first_layer) + ".." +
                        std::to_string(shard.end_layer - 1) + ") needs " + format_bytes(needed) +
                        " but the HBM budget is " + format_bytes(budget),
                    needed, "hbm");
}

}  // namespace

ShardPlan simulate_shards(std::span<const Layer> layers, std::span<const std::size_t> shard_starts,
                          const ShardOptions& options) {
  const ShardCosts costs(layers, options);
  check_starts(shard_starts, layers.size());
  ShardPlan plan;
  for (std::size_t k = 0; k < shard_starts.size(); ++k) {
    Shard shard;
    shard.first_layer = shard_starts[k];
    shard.end_layer = k + 1 < shard_starts.size() ? shard_starts[k + 1] : layers.size();
    check_shard_fits(costs, shard, k, options.hbm_budget_bytes);
    shard.weight_bytes = costs.weight_bytes(shard.first_layer, shard.end_layer);
    shard.activation_bytes = costs.activation_bytes(shard.first_layer, shard.end_layer);
    shard.peak_bytes = costs.resident_bytes(shard.first_layer, shard.end_layer);
    shard.load_seconds = costs.load_seconds(shard.first_layer, shard.end_layer);
    shard.compute_seconds = costs.compute_seconds(shard.first_layer, shard.end_layer);
    plan.shards.push_back(shard);
  }
  double engine_free = 0;   // when the copy engine finishes its last load
  double compute_done = 0;  // when the previous shard finishes computing
  for (std::size_t k = 0; k < plan.shards.size(); ++k) {
    Shard& shard = plan.shards[k];
    if (k == 0) {
      shard.load_start = 0;
    } else {
      Shard& previous = plan.shards[k - 1];
      previous.prefetches_next =
          costs.fits_with_next(previous.first_layer, shard.first_layer, shard.end_layer);
      const double buffer_free =
          k >= 2 ? plan.shards[k - 2].compute_start + plan.shards[k - 2].compute_seconds : 0;
      shard.load_start =
          previous.prefetches_next ? std::max(engine_free, buffer_free) : compute_done;
      if (previous.prefetches_next) {
        previous.peak_bytes = add_or_no_fit(previous.peak_bytes, shard.weight_bytes);
      }
    }
    engine_free = shard.load_start + shard.load_seconds;
    shard.compute_start = std::max(compute_done, engine_free);
    shard.stall_seconds = shard.compute_start - compute_done;
    compute_done = shard.compute_start + shard.compute_seconds;
    plan.compute_seconds += shard.compute_seconds;
    plan.load_seconds += shard.load_seconds;
    plan.stall_seconds += shard.stall_seconds;
  }
  plan.total_seconds = compute_done;
  return plan;
}

std::vector<std::size_t> fewest_shard_starts(std::span<const Layer> layers,
                                             const ShardOptions& options) {
  const ShardCosts costs(layers, options);
  costs.check_every_layer_fits(layers);
  std::vector<std::size_t> starts;
  std::size_t first = 0;
  while (first < layers.size()) {
    starts.push_back(first);
    std::size_t end = first + 1;
    while (end < layers.size() && costs.fits(first, end + 1)) ++end;
    first = end;
  }
  return starts;
}

}  // namespace npumem::plan
