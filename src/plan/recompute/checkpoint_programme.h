// The dynamic programme behind plan_recompute (Chen et al.'s memory model: peak = kept
// bytes + the largest run of dropped outputs).
//
// It walks the layers keeping, for each last kept layer, the Pareto-best plan prefixes by
// (kept bytes, peak so far, recompute time). A prefix with no more kept bytes and no
// higher peak is as good for every continuation, because a later segment of S bytes raises
// the peak to max(peak, kept + S) and every later kept output adds to both. The problem
// is a knapsack in disguise (weakly NP-hard), so these sets can grow exponentially; when
// one exceeds a cap it is thinned by comparing kept bytes and peaks on a coarse grid, and
// the result is then no longer guaranteed optimal.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace npumem::plan {

struct CheckpointChoice {
  std::vector<bool> keep;
  bool exhaustive = false;  // no state set was thinned: the choice is optimal
};

// The keep flags with the least recompute time whose peak fits the budget (ties: the lower
// peak), or none when no plan fits. Past a bound on its work the programme gives up, and a
// thinned or abandoned search gives way to priced_checkpoints' plan when that is faster.
std::optional<CheckpointChoice> fastest_checkpoints(std::span<const std::uint64_t> activation_bytes,
                                                    std::span<const double> compute_seconds,
                                                    std::uint64_t budget);

// The multiplier (Lagrangian) search: for bounds M on the largest dropped run, the keep
// set of least recompute time + price x kept bytes (a linear sliding-window programme),
// the price bisected until the kept bytes fit beside M. Not exact, but in time linear in
// the layers: on long varied chains it recomputes less than the thinned programme (3,000
// layers: 543 ms against 658). The fastest keep set found that fits, or none.
std::optional<std::vector<bool>> priced_checkpoints(std::span<const std::uint64_t> activation_bytes,
                                                    std::span<const double> compute_seconds,
                                                    std::uint64_t budget);

// The least peak any keep set reaches: the least over bounds M on the largest segment of
// M + the fewest kept bytes that keep every segment within M (a sliding-window programme).
std::uint64_t least_checkpoint_peak(std::span<const std::uint64_t> activation_bytes);

}  // namespace npumem::plan
