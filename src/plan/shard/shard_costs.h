// What one shard of consecutive layers [first, end) costs: its weights, the activations it
// holds, whether it fits the HBM budget (alone, or beside the next shard's weights), and
// its load and compute times. Shared by the shard planner and the timeline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "npumem/plan.h"
#include "plan/shard/range_max.h"

namespace npumem::plan {

class ShardCosts {
 public:
  // Throws ConfigError on a non-positive bandwidth or a bad layer time.
  ShardCosts(std::span<const Layer> layers, const ShardOptions& options);

  std::size_t layer_count() const { return compute_.size(); }
  std::uint64_t weight_bytes(std::size_t first, std::size_t end) const;
  // The most bytes of input plus output activation live at one of its layers.
  std::uint64_t activation_bytes(std::size_t first, std::size_t end) const;
  // Weights plus activations; saturates at 2^64-1.
  std::uint64_t resident_bytes(std::size_t first, std::size_t end) const;
  bool fits(std::size_t first, std::size_t end) const;
  // Whether shard [next, next_end) can load while shard [first, next) runs.
  bool fits_with_next(std::size_t first, std::size_t next, std::size_t next_end) const;
  double load_seconds(std::size_t first, std::size_t end) const;
  double compute_seconds(std::size_t first, std::size_t end) const;

  // Throws OutOfMemory naming the first layer that does not fit the budget on its own.
  void check_every_layer_fits(std::span<const Layer> layers) const;

 private:
  std::uint64_t budget_;
  double load_bytes_per_s_;
  std::vector<std::uint64_t> weight_prefix_;  // saturating sums of weights before layer i
  RangeMax activation_;                       // input + output bytes per layer (saturating)
  std::vector<double> compute_;
  std::vector<double> compute_prefix_;
};

}  // namespace npumem::plan
