// Recompute (checkpoint) plans for training a chain of layers: the cost of a keep set,
// Chen's sqrt(n) rule, and the fastest plan within a budget (checkpoint_programme.h).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "npumem/units.h"
#include "plan/memory/plan_instance.h"
#include "plan/recompute/checkpoint_programme.h"

namespace npumem::plan {

RecomputePlan evaluate_checkpoints(std::span<const Layer> layers, std::vector<bool> keep,
                                   const LayerTiming& timing) {
  if (keep.size() != layers.size()) {
    throw ConfigError(
        "a checkpoint plan needs one keep flag per layer: " + std::to_string(keep.size()) +
        " flags for " + std::to_string(layers.size()) + " layers");
  }
  const std::vector<double> compute = layer_compute_seconds(layers, timing);
  RecomputePlan plan;
  std::uint64_t kept = 0;
  std::uint64_t segment = 0;
  std::uint64_t largest_segment = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    plan.forward_seconds += compute[i];
    if (keep[i]) {
      kept = add_or_no_fit(kept, layers[i].activation_bytes);
      segment = 0;
    } else {
      segment = add_or_no_fit(segment, layers[i].activation_bytes);
      largest_segment = std::max(largest_segment, segment);
      plan.recompute_seconds += compute[i];
    }
  }
  plan.peak_bytes = add_or_no_fit(kept, largest_segment);
  plan.keep = std::move(keep);
  return plan;
}

RecomputePlan sqrt_n_checkpoints(std::span<const Layer> layers, const LayerTiming& timing) {
  const auto interval = static_cast<std::size_t>(std::ceil(std::sqrt(layers.size())));
  std::vector<bool> keep(layers.size(), false);
  for (std::size_t i = 0; i < layers.size(); ++i) keep[i] = (i + 1) % interval == 0;
  return evaluate_checkpoints(layers, std::move(keep), timing);
}

RecomputePlan plan_recompute(std::span<const Layer> layers, const RecomputeOptions& options) {
  const std::vector<double> compute = layer_compute_seconds(layers, options.timing);
  std::vector<std::uint64_t> activation_bytes;
  for (const Layer& layer : layers) activation_bytes.push_back(layer.activation_bytes);
  const std::uint64_t least_peak = least_checkpoint_peak(activation_bytes);
  if (least_peak > options.activation_budget_bytes) {
    throw OutOfMemory("no recompute plan fits an activation budget of " +
                          format_bytes(options.activation_budget_bytes) +
                          ": the leanest plan needs " + format_bytes(least_peak),
                      least_peak, "activations");
  }
  std::optional<CheckpointChoice> choice =
      fastest_checkpoints(activation_bytes, compute, options.activation_budget_bytes);
  RecomputePlan plan = evaluate_checkpoints(layers, std::move(choice.value().keep), options.timing);
  // Recomputing nothing cannot be beaten, however bounded the search was.
  plan.proven_optimal = choice->exhaustive || plan.recompute_seconds == 0;
  return plan;
}

}  // namespace npumem::plan
