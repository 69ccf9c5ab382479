#include "plan/shard/shard_costs.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "npumem/errors.h"
#include "npumem/units.h"
#include "plan/memory/plan_instance.h"

namespace npumem::plan {

namespace {

std::vector<std::uint64_t> input_plus_output_bytes(std::span<const Layer> layers,
                                                   std::uint64_t input_bytes) {
  std::vector<std::uint64_t> bytes;
  for (const Layer& layer : layers) {
    bytes.push_back(add_or_no_fit(input_bytes, layer.activation_bytes));
    input_bytes = layer.activation_bytes;
  }
  return bytes;
}

}  // namespace

ShardCosts::ShardCosts(std::span<const Layer> layers, const ShardOptions& options)
    : budget_(options.hbm_budget_bytes),
      load_bytes_per_s_(options.load_bytes_per_s),
      activation_(input_plus_output_bytes(layers, options.timing.input_bytes)),
      compute_(layer_compute_seconds(layers, options.timing)) {
  if (!(load_bytes_per_s_ > 0) || !std::isfinite(load_bytes_per_s_)) {
    throw ConfigError("DDR to HBM bandwidth must be a positive number of bytes per second");
  }
  weight_prefix_.push_back(0);
  compute_prefix_.push_back(0);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    weight_prefix_.push_back(add_or_no_fit(weight_prefix_.back(), layers[i].weight_bytes));
    compute_prefix_.push_back(compute_prefix_.back() + compute_[i]);
  }
}

std::uint64_t ShardCosts::weight_bytes(std::size_t first, std::size_t end) const {
  // A saturated prefix makes every later difference meaningless, so report saturation.
  if (weight_prefix_[end] == kNoFit) return kNoFit;
  return weight_prefix_[end] - weight_prefix_[first];
}

std::uint64_t ShardCosts::activation_bytes(std::size_t first, std::size_t end) const {
  return activation_.max(first, end - 1);
}

std::uint64_t ShardCosts::resident_bytes(std::size_t first, std::size_t end) const {
  return add_or_no_fit(weight_bytes(first, end), activation_bytes(first, end));
}

bool ShardCosts::fits(std::size_t first, std::size_t end) const {
  return resident_bytes(first, end) <= budget_;
}

bool ShardCosts::fits_with_next(std::size_t first, std::size_t next, std::size_t next_end) const {
  return add_or_no_fit(resident_bytes(first, next), weight_bytes(next, next_end)) <= budget_;
}

double ShardCosts::load_seconds(std::size_t first, std::size_t end) const {
  return static_cast<double>(weight_bytes(first, end)) / load_bytes_per_s_;
}

double ShardCosts::compute_seconds(std::size_t first, std::size_t end) const {
  return compute_prefix_[end] - compute_prefix_[first];
}

// Names the first layer past the budget; asks for the most any layer needs, the smallest
// budget that fits (a shard per layer then fits), so that one retry suffices.
void ShardCosts::check_every_layer_fits(std::span<const Layer> layers) const {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (fits(i, i + 1)) continue;
    std::uint64_t most = 0;
    for (std::size_t j = 0; j < layers.size(); ++j) most = std::max(most, resident_bytes(j, j + 1));
    throw OutOfMemory("layer " + std::to_string(i) + " '" + layers[i].name + "' needs " +
                          format_bytes(resident_bytes(i, i + 1)) + " (weights " +
                          format_bytes(weight_bytes(i, i + 1)) + " + activations " +
                          format_bytes(activation_bytes(i, i + 1)) + ") but the HBM budget is " +
                          format_bytes(budget_) + "; the smallest budget that fits is " +
                          format_bytes(most) + " (" + std::to_string(most) +
                          " bytes: the layer that needs most)",
                      most, "hbm");
  }
}

}  // namespace npumem::plan
