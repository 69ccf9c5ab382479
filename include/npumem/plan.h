// Offline planners: pure functions from a model's description to a plan. No I/O here:
// callers read the files and print the results (see docs/PLANNING.md).
//
// - Static memory plan: tensor lifetimes -> one offset per tensor in a single arena.
// - Shard plan: layers whose weights exceed HBM -> consecutive shards, double-buffered
//   from DDR, with the boundaries that minimise total time.
// - Recompute plan: layers -> which activations training keeps and which it recomputes,
//   minimising recompute time under an activation memory budget.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/arena_planner.h"
#include "npumem/errors.h"

namespace npumem::plan {

// ---------------------------------------------------------------- static memory plan

using TensorLifetime = npumem::TensorLifetime;  // declared beside the ArenaPlanner interface

// Parses lifetime records: one tensor per line, `<bytes> <first_op> <last_op>`; blank
// lines and lines starting with `#` are skipped. Throws ParseError(source, line, problem)
// on a missing or extra field, a number that is negative, malformed or over 2^64-1, or
// last_op < first_op.
// `lines`, when given, receives each tensor's line number.
std::vector<TensorLifetime> parse_lifetime_records(std::string_view text, const std::string& source,
                                                   std::vector<std::size_t>* lines = nullptr);
// Throws Error naming `source` when the tensors' bytes sum past 2^63, as
// parse_lifetime_records does for records: plans sum them, and the sums must stay exact.
void check_bytes_sum(std::span<const TensorLifetime> tensors, const std::string& source);

// A size that overflows 64 bits because of one tensor (`tensor`: its index in the
// input), so that a caller that read the tensors from a file can name the line.
class TensorSizeError : public Error {
 public:
  TensorSizeError(std::size_t tensor, const std::string& problem)
      : Error(problem), tensor_(tensor) {}
  std::size_t tensor() const { return tensor_; }

 private:
  std::size_t tensor_;
};

struct MemoryPlanOptions {
  // Every offset is a multiple of this and every size is rounded up to it. A power of two.
  std::uint64_t alignment = 64;
  // The search stops at this deadline, at max_search_iterations, or at the lower bound,
  // whichever comes first. A plan is always returned, even past the deadline.
  std::chrono::nanoseconds time_limit = std::chrono::seconds(1);
  // Whether time_limit is of work done (each step priced at what it takes on a reference
  // machine), so that the plan depends on the inputs and the seed alone, not on how
  // loaded the machine is; else of the machine's clock.
  bool counts_work = false;
  // Bounds the randomised search; with a generous time_limit, the plan then depends on
  // the inputs and the seed only.
  std::uint64_t max_search_iterations = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t seed = 1;
};

// `seconds` as MemoryPlanOptions::time_limit: 10^9 s or more (infinity too) is no limit,
// which a cast to nanoseconds would overflow. Throws ConfigError for NaN or a negative.
std::chrono::nanoseconds time_limit_from_seconds(double seconds);

struct MemoryPlan {
  std::vector<std::uint64_t> offsets;  // one per tensor, in input order
  std::uint64_t arena_bytes = 0;       // max over tensors of offset + aligned size
  // Max over ops of the aligned bytes live there: no plan can be smaller.
  std::uint64_t lower_bound_bytes = 0;
  // Sum of all aligned sizes (no reuse); saturates at 2^64-1.
  std::uint64_t naive_bytes = 0;
  std::string algorithm;                // the method that found this plan, e.g. "skyline+search"
  bool proven_optimal = false;          // arena equals the lower bound, or the exact search ended
  std::uint64_t search_iterations = 0;  // randomised search rounds that ran

  // arena / lower bound; 1 when both are zero.
  double ratio() const;
};

// Rounds bytes up to a multiple of alignment (a power of two). Throws Error when the
// result exceeds 2^64-1.
std::uint64_t align_up(std::uint64_t bytes, std::uint64_t alignment);

// The lower bound and naive size of MemoryPlan for these tensors. Throws ConfigError on an
// alignment that is not a power of two, TensorSizeError when the bytes live at one op
// exceed 2^64-1.
std::uint64_t memory_lower_bound(std::span<const TensorLifetime> tensors, std::uint64_t alignment);
std::uint64_t naive_memory(std::span<const TensorLifetime> tensors, std::uint64_t alignment);

// Places every tensor so that tensors with overlapping lifetimes never overlap in memory,
// minimising the arena. Zero-byte tensors get offset 0. Deterministic for a given seed
// and search iteration count. Throws ConfigError on a bad alignment, TensorSizeError
// when a tensor's aligned size or the bytes live at one op overflow 64 bits, Error when
// no plan fits in 64-bit offsets.
MemoryPlan plan_memory(std::span<const TensorLifetime> tensors,
                       const MemoryPlanOptions& options = {});

// An ArenaPlanner over plan_memory with this deadline (what the planned strategy uses).
std::shared_ptr<const ArenaPlanner> memory_arena_planner(std::chrono::nanoseconds time_limit);

// ---------------------------------------------------------------- layers

// One layer of a model run as a chain: it reads the previous layer's output (the model
// input for the first layer) and its weights, and writes its output activation.
struct Layer {
  std::string name;
  std::uint64_t weight_bytes = 0;
  std::uint64_t activation_bytes = 0;  // its output
  // Measured or estimated forward time; absent: estimated as memory-bound (see
  // LayerTiming).
  std::optional<double> compute_seconds;
};

// How a layer's forward time is estimated when the model does not give it: the bytes it
// moves (weights, input, output) at HBM bandwidth, the seeds' 1.2 TB/s by default.
struct LayerTiming {
  double hbm_bytes_per_s = 1.2e12;
  std::uint64_t input_bytes = 0;  // the model input, read by the first layer
};

// Forward time of each layer: its compute_seconds, or the memory-bound estimate.
// Throws ConfigError on a negative or non-finite time or a non-positive bandwidth.
std::vector<double> layer_compute_seconds(std::span<const Layer> layers, const LayerTiming& timing);

// ---------------------------------------------------------------- shard plan

struct ShardOptions {
  std::uint64_t hbm_budget_bytes = 0;
  double load_bytes_per_s = 50e9;  // DDR -> HBM, the seeds' figure
  LayerTiming timing;
};

// Layers [first_layer, end_layer) run as one shard; times in seconds from the start.
struct Shard {
  std::size_t first_layer = 0;
  std::size_t end_layer = 0;
  std::uint64_t weight_bytes = 0;
  std::uint64_t activation_bytes = 0;  // peak of input + output over its layers
  // Weights + activations, plus the next shard's weights when they are prefetched.
  std::uint64_t peak_bytes = 0;
  bool prefetches_next = false;  // the next shard's weights load while this one runs
  double load_start = 0;
  double load_seconds = 0;
  double compute_start = 0;
  double compute_seconds = 0;
  double stall_seconds = 0;  // compute idle before this shard, waiting for its weights
};

struct ShardPlan {
  std::vector<Shard> shards;
  double total_seconds = 0;
  double compute_seconds = 0;  // sum over shards
  double load_seconds = 0;
  double stall_seconds = 0;
};

// The shard boundaries that minimise total time (an exact dynamic programme over
// consecutive shards). Two weight buffers: shard k+1 loads while shard k computes when
// both fit the budget beside shard k's activations; otherwise it loads after. Throws
// OutOfMemory naming the layer when one layer alone does not fit, ConfigError on a
// non-positive bandwidth.
ShardPlan plan_shards(std::span<const Layer> layers, const ShardOptions& options);

// The timeline of given shards (shard_starts: the first layer of each shard, ascending,
// starting at 0). Throws ConfigError on bad starts, OutOfMemory when a shard does not fit.
ShardPlan simulate_shards(std::span<const Layer> layers, std::span<const std::size_t> shard_starts,
                          const ShardOptions& options);

// The fewest shards: each shard takes layers while they fit. The usual sharding, and the
// baseline that plan_shards is measured against.
std::vector<std::size_t> fewest_shard_starts(std::span<const Layer> layers,
                                             const ShardOptions& options);

// ---------------------------------------------------------------- recompute plan

struct RecomputeOptions {
  std::uint64_t activation_budget_bytes = 0;
  LayerTiming timing;
};

// Which layer outputs training keeps for the backward pass. Dropped outputs form segments
// (maximal runs); backward recomputes each segment from the kept output before it.
// Memory model (Chen et al. 2016): peak = kept bytes + the largest segment's bytes.
struct RecomputePlan {
  std::vector<bool> keep;  // per layer
  std::uint64_t peak_bytes = 0;
  double recompute_seconds = 0;  // forward time of the dropped layers, run once more
  double forward_seconds = 0;    // one forward pass, for scale
  // plan_recompute only: its search was exhaustive, so no plan within the budget
  // recomputes less. Long chains with many distinct sizes exceed the search's bounds.
  bool proven_optimal = false;
};

// The plan with the least recompute time whose peak fits the budget: dynamic programming
// over segments with Pareto sets of plan prefixes, exact unless those sets outgrow their
// bound (see proven_optimal); past a bound on its work, or thinned, a Lagrangian search
// (linear time per price) plans too, and the faster plan is taken. Throws OutOfMemory with the least peak any plan reaches when
// none fits.
RecomputePlan plan_recompute(std::span<const Layer> layers, const RecomputeOptions& options);

// The peak and recompute time of a given keep set (one flag per layer).
RecomputePlan evaluate_checkpoints(std::span<const Layer> layers, std::vector<bool> keep,
                                   const LayerTiming& timing);

// Chen's sqrt(n) rule: keep every ceil(sqrt(n))-th output, ignoring the budget.
RecomputePlan sqrt_n_checkpoints(std::span<const Layer> layers, const LayerTiming& timing);

}  // namespace npumem::plan
