// plan_shards: the shard boundaries with the least total time.
//
// With two weight buffers the timeline has a closed form. Let S_k be when shard k starts
// computing, c_k its compute time and l_k its load time. Shard k+1 loads when the copy
// engine is free and its buffer (shard k-1's) is released, which is exactly S_k; so
// S_{k+1} = S_k + max(c_k, l_{k+1}). When shard k+1's weights do not fit beside shard k,
// it loads after shard k ends: S_{k+1} = S_k + c_k + l_{k+1}. Either way the step depends
// on the two shards alone, so a dynamic programme over (previous shard, shard) pairs is
// exact: total = l_0 + sum of steps + c_last.
#include <limits>

#include "npumem/plan.h"
#include "plan/shard/shard_costs.h"

namespace npumem::plan {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// The best way found to reach shard [first, first + width) : its compute start.
struct Reach {
  double start = kNever;
  std::size_t shards = 0;
  std::size_t previous_first = 0;  // first layer of the shard before it
};

bool better(double start, std::size_t shards, const Reach& than) {
  return start < than.start || (start == than.start && shards < than.shards);
}

class ShardProgramme {
 public:
  explicit ShardProgramme(const ShardCosts& costs) : costs_(costs), reach_(costs.layer_count()) {
    for (std::size_t first = 0; first < costs.layer_count(); ++first) {
      std::size_t end = first + 1;
      while (end <= costs.layer_count() && costs.fits(first, end)) ++end;
      reach_[first].resize(end - first - 1);  // every width that fits
    }
  }

  std::vector<std::size_t> best_starts() {
    for (std::size_t width = 1; width <= reach_[0].size(); ++width) {
      reach_[0][width - 1] = Reach{costs_.load_seconds(0, width), 1, 0};
    }
    for (std::size_t first = 1; first < reach_.size(); ++first) extend_to(first);
    return trace_back(best_last_shard());
  }

 private:
  // Fills reach_[next][*] from every shard ending at `next`.
  void extend_to(std::size_t next) {
    for (std::size_t first = 0; first < next; ++first) {
      if (reach_[first].size() < next - first) continue;  // [first, next) does not fit
      const Reach& from = reach_[first][next - first - 1];
      if (from.start == kNever) continue;
      const double compute = costs_.compute_seconds(first, next);
      for (std::size_t width = 1; width <= reach_[next].size(); ++width) {
        const double load = costs_.load_seconds(next, next + width);
        const double step = costs_.fits_with_next(first, next, next + width)
                                ? std::max(compute, load)
                                : compute + load;
        Reach& to = reach_[next][width - 1];
        if (better(from.start + step, from.shards + 1, to)) {
          to = Reach{from.start + step, from.shards + 1, first};
        }
      }
    }
  }

  // The first layer of the best final shard.
  std::size_t best_last_shard() const {
    const std::size_t layers = reach_.size();
    std::size_t best_first = 0;
    Reach best;
    for (std::size_t first = 0; first < layers; ++first) {
      if (reach_[first].size() < layers - first) continue;
      const Reach& last = reach_[first][layers - first - 1];
      const double total = last.start + costs_.compute_seconds(first, layers);
      if (better(total, last.shards, best)) {
        best = Reach{total, last.shards, 0};
        best_first = first;
      }
    }
    return best_first;
  }

  std::vector<std::size_t> trace_back(std::size_t last_first) const {
    std::vector<std::size_t> starts;
    std::size_t first = last_first;
    std::size_t end = reach_.size();
    while (true) {
      starts.insert(starts.begin(), first);
      if (first == 0) return starts;
      const std::size_t previous = reach_[first][end - first - 1].previous_first;
      end = first;
      first = previous;
    }
  }

  const ShardCosts& costs_;
  std::vector<std::vector<Reach>> reach_;  // [first][width - 1]
};

}  // namespace

ShardPlan plan_shards(std::span<const Layer> layers, const ShardOptions& options) {
  const ShardCosts costs(layers, options);
  costs.check_every_layer_fits(layers);
  if (layers.empty()) return simulate_shards(layers, {}, options);
  const std::vector<std::size_t> starts = ShardProgramme(costs).best_starts();
  return simulate_shards(layers, starts, options);
}

}  // namespace npumem::plan
