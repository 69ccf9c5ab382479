#include "plan/recompute/checkpoint_programme.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>

#include "plan/memory/plan_instance.h"

namespace npumem::plan {
namespace {

// Above this many states for one last kept layer, the set is thinned.
constexpr std::size_t kMaxStates = 512;
// Thinning starts with a grid of the largest peak over this many cells per axis, then
// coarsens by halves until the set fits.
constexpr std::uint64_t kGridCells = 4096;

// A Pareto-best plan prefix that keeps layer `position - 1` (position 0: nothing kept yet,
// only the model input).
struct State {
  std::uint64_t kept_bytes = 0;
  // Kept bytes plus the largest segment so far: the plan's peak if it kept nothing more.
  std::uint64_t peak_bytes = 0;
  double recompute_seconds = 0;
  std::size_t previous_position = 0;  // the state it extends: states_[previous_position]
  std::size_t previous_index = 0;     // ... [previous_index]
};

// The states no faster one matches in both kept bytes and peak, both compared after
// dividing by grain (1: exactly).
std::vector<State> pareto_states(std::vector<State> states, std::uint64_t grain) {
  std::sort(states.begin(), states.end(), [](const State& a, const State& b) {
    if (a.recompute_seconds != b.recompute_seconds) {
      return a.recompute_seconds < b.recompute_seconds;
    }
    if (a.kept_bytes != b.kept_bytes) return a.kept_bytes < b.kept_bytes;
    return a.peak_bytes < b.peak_bytes;
  });
  // The states kept so far, all at least as fast as the next: kept cell -> peak cell, the
  // peak falling as kept bytes rise.
  std::map<std::uint64_t, std::uint64_t> staircase;
  std::vector<State> front;
  for (const State& state : states) {
    const std::uint64_t kept = state.kept_bytes / grain;
    const std::uint64_t peak = state.peak_bytes / grain;
    auto next = staircase.upper_bound(kept);
    if (next != staircase.begin() && std::prev(next)->second <= peak) continue;
    while (next != staircase.end() && next->second >= peak) next = staircase.erase(next);
    staircase[kept] = peak;
    front.push_back(state);
  }
  return front;
}

class CheckpointProgramme {
 public:
  CheckpointProgramme(std::span<const std::uint64_t> activation_bytes,
                      std::span<const double> compute_seconds, std::uint64_t budget)
      : activation_(activation_bytes), budget_(budget), states_(activation_bytes.size() + 1) {
    byte_prefix_.push_back(0);
    time_prefix_.push_back(0);
    for (std::size_t i = 0; i < activation_bytes.size(); ++i) {
      byte_prefix_.push_back(add_or_no_fit(byte_prefix_.back(), activation_bytes[i]));
      time_prefix_.push_back(time_prefix_.back() + compute_seconds[i]);
    }
    states_[0].push_back(State{});
  }

  std::optional<CheckpointChoice> solve() {
    for (std::size_t position = 1; position < states_.size(); ++position) {
      states_[position] = bounded(pareto_states(extensions(position, true), 1));
    }
    const std::vector<State> finals = extensions(states_.size(), false);
    const State* best = nullptr;
    for (const State& state : finals) {
      if (best == nullptr || state.recompute_seconds < best->recompute_seconds ||
          (state.recompute_seconds == best->recompute_seconds &&
           state.peak_bytes < best->peak_bytes)) {
        best = &state;
      }
    }
    if (best == nullptr) return std::nullopt;
    return CheckpointChoice{keep_flags(*best), exhaustive_};
  }

 private:
  // The states that keep layer `position - 1` (keep_layer), or that end the chain
  // (position = layer count + 1, !keep_layer): each state of an earlier position extended
  // over the layers dropped in between.
  std::vector<State> extensions(std::size_t position, bool keep_layer) const {
    const std::size_t segment_end = position - 1;  // dropped layers: [from, segment_end)
    const std::uint64_t kept = keep_layer ? activation_[segment_end] : 0;
    std::vector<State> extended;
    for (std::size_t from = segment_end + 1; from-- > 0;) {
      const std::uint64_t segment_bytes = bytes(from, segment_end);
      if (segment_bytes > budget_) break;  // longer segments only grow
      const double segment_seconds = time_prefix_[segment_end] - time_prefix_[from];
      for (std::size_t index = 0; index < states_[from].size(); ++index) {
        const State& previous = states_[from][index];
        State state;
        state.kept_bytes = add_or_no_fit(previous.kept_bytes, kept);
        state.peak_bytes = add_or_no_fit(
            std::max(previous.peak_bytes, add_or_no_fit(previous.kept_bytes, segment_bytes)), kept);
        state.recompute_seconds = previous.recompute_seconds + segment_seconds;
        state.previous_position = from;
        state.previous_index = index;
        if (state.peak_bytes <= budget_) extended.push_back(state);
      }
    }
    return extended;
  }

  // Thins a state set above kMaxStates on ever coarser grids.
  std::vector<State> bounded(std::vector<State> states) {
    if (states.size() <= kMaxStates) return states;
    exhaustive_ = false;
    std::uint64_t highest = 0;
    for (const State& state : states) highest = std::max(highest, state.peak_bytes);
    std::uint64_t grain = std::max<std::uint64_t>(1, highest / kGridCells);
    while (states.size() > kMaxStates) {
      states = pareto_states(std::move(states), grain);
      grain *= 2;
    }
    return states;
  }

  std::uint64_t bytes(std::size_t first, std::size_t end) const {
    if (byte_prefix_[end] == kNoFit) return kNoFit;
    return byte_prefix_[end] - byte_prefix_[first];
  }

  std::vector<bool> keep_flags(const State& last) const {
    std::vector<bool> keep(activation_.size(), false);
    std::size_t position = last.previous_position;
    std::size_t index = last.previous_index;
    while (position > 0) {
      keep[position - 1] = true;
      const State& state = states_[position][index];
      position = state.previous_position;
      index = state.previous_index;
    }
    return keep;
  }

  std::span<const std::uint64_t> activation_;
  std::uint64_t budget_;
  std::vector<std::uint64_t> byte_prefix_;  // saturating
  std::vector<double> time_prefix_;
  std::vector<std::vector<State>> states_;  // [position]: states keeping layer position - 1
  bool exhaustive_ = true;
};

// The fewest kept bytes with every segment within `largest_segment`: kept[j] = a_j + the
// least kept[i] over the earlier kept layers i whose gap to j fits, a window that only
// slides right, so a monotonic deque gives each minimum.
std::uint64_t fewest_kept_bytes(std::span<const std::uint64_t> activation,
                                const std::vector<std::uint64_t>& byte_prefix,
                                std::uint64_t largest_segment) {
  const std::size_t count = activation.size();
  // Positions 0..count: position p keeps layer p - 1 (0: the input, kept for free).
  std::vector<std::uint64_t> kept(count + 1, kNoFit);
  kept[0] = 0;
  std::deque<std::size_t> window;  // positions by rising kept bytes
  std::size_t next_in = 0;
  const auto gap = [&](std::size_t from, std::size_t to) {  // dropped layers [from, to)
    return byte_prefix[to] - byte_prefix[from];
  };
  const auto best_before = [&](std::size_t end) {  // the least kept[p] with gap(p, end) fits
    while (next_in <= end) {
      while (!window.empty() && kept[window.back()] >= kept[next_in]) window.pop_back();
      window.push_back(next_in++);
    }
    while (!window.empty() && gap(window.front(), end) > largest_segment) window.pop_front();
    return window.empty() ? kNoFit : kept[window.front()];
  };
  for (std::size_t position = 1; position <= count; ++position) {
    const std::uint64_t before = best_before(position - 1);
    if (before != kNoFit) kept[position] = add_or_no_fit(before, activation[position - 1]);
  }
  return best_before(count);
}

}  // namespace

std::optional<CheckpointChoice> fastest_checkpoints(std::span<const std::uint64_t> activation_bytes,
                                                    std::span<const double> compute_seconds,
                                                    std::uint64_t budget) {
  return CheckpointProgramme(activation_bytes, compute_seconds, budget).solve();
}

std::uint64_t least_checkpoint_peak(std::span<const std::uint64_t> activation_bytes) {
  std::vector<std::uint64_t> byte_prefix{0};
  for (const std::uint64_t bytes : activation_bytes) {
    byte_prefix.push_back(add_or_no_fit(byte_prefix.back(), bytes));
  }
  // The largest segment of the leanest plan is the sum of some run of outputs (or 0).
  std::vector<std::uint64_t> bounds{0};
  for (std::size_t first = 0; first < activation_bytes.size(); ++first) {
    for (std::size_t end = first + 1; end <= activation_bytes.size(); ++end) {
      bounds.push_back(byte_prefix[end] - byte_prefix[first]);
    }
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::uint64_t least = kNoFit;
  for (const std::uint64_t bound : bounds) {
    if (bound >= least) break;  // the peak is at least the bound
    least = std::min(least,
                     add_or_no_fit(bound, fewest_kept_bytes(activation_bytes, byte_prefix, bound)));
  }
  return least;
}

}  // namespace npumem::plan
