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
// The programme gives up past this many state extensions (about half a second): a chain
// of 3,000 varied layers took 72 s, and the multiplier search (cheaper_checkpoints) found
// plans that recompute less on long chains than the thinned sets did.
constexpr std::uint64_t kMaxExtensions = 10'000'000;
// The multiplier search: bounds on the largest dropped run tried, evenly between 0 and
// the budget, then as many again about the best; bisection steps per bound.
constexpr int kSegmentBounds = 128;
constexpr int kBisections = 48;
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

  // None when no plan fits, or when the search gave up (gave_up()).
  std::optional<CheckpointChoice> solve() {
    for (std::size_t position = 1; position < states_.size(); ++position) {
      states_[position] = bounded(pareto_states(extensions(position, true), 1));
      if (extensions_ > kMaxExtensions) {
        gave_up_ = true;
        return std::nullopt;
      }
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

  bool gave_up() const { return gave_up_; }

 private:
  // The states that keep layer `position - 1` (keep_layer), or that end the chain
  // (position = layer count + 1, !keep_layer): each state of an earlier position extended
  // over the layers dropped in between.
  std::vector<State> extensions(std::size_t position, bool keep_layer) {
    const std::size_t segment_end = position - 1;  // dropped layers: [from, segment_end)
    const std::uint64_t kept = keep_layer ? activation_[segment_end] : 0;
    std::vector<State> extended;
    for (std::size_t from = segment_end + 1; from-- > 0;) {
      const std::uint64_t segment_bytes = bytes(from, segment_end);
      if (segment_bytes > budget_) break;  // longer segments only grow
      const double segment_seconds = time_prefix_[segment_end] - time_prefix_[from];
      extensions_ += states_[from].size();
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
  std::uint64_t extensions_ = 0;
  bool gave_up_ = false;
};

// The peak and recompute time of a keep set, from the definition.
struct Outcome {
  std::uint64_t peak_bytes = 0;
  double recompute_seconds = 0;
};

Outcome outcome_of(std::span<const std::uint64_t> activation, std::span<const double> seconds,
                   const std::vector<bool>& keep) {
  std::uint64_t kept = 0;
  std::uint64_t run = 0;
  std::uint64_t largest_run = 0;
  Outcome outcome;
  for (std::size_t i = 0; i < activation.size(); ++i) {
    if (keep[i]) {
      kept = add_or_no_fit(kept, activation[i]);
      run = 0;
    } else {
      run = add_or_no_fit(run, activation[i]);
      largest_run = std::max(largest_run, run);
      outcome.recompute_seconds += seconds[i];
    }
  }
  outcome.peak_bytes = add_or_no_fit(kept, largest_run);
  return outcome;
}

// Lagrangian relaxation of the budget: with every dropped run within `largest_run`, the
// keep set of least recompute time + `price` x kept bytes, by a sliding-window programme
// (as fewest_kept_bytes); its kept bytes fall as the price rises.
class PricedChain {
 public:
  PricedChain(std::span<const std::uint64_t> activation, std::span<const double> seconds)
      : activation_(activation), byte_prefix_{0}, time_prefix_{0} {
    for (std::size_t i = 0; i < activation.size(); ++i) {
      byte_prefix_.push_back(add_or_no_fit(byte_prefix_.back(), activation[i]));
      time_prefix_.push_back(time_prefix_.back() + seconds[i]);
    }
  }

  // The keep flags and their kept bytes.
  std::pair<std::vector<bool>, std::uint64_t> cheapest(std::uint64_t largest_run, double price) {
    const std::size_t count = activation_.size();
    // Positions 0..count + 1: p keeps layer p - 1 (0: the input; count + 1: the end).
    cost_.assign(count + 2, 0);
    before_.assign(count + 2, 0);
    window_.clear();
    std::size_t next_in = 0;
    // The cost of a state at p, less the time of the layers before it (each later gap
    // adds its time back from p on).
    const auto base = [&](std::size_t p) { return cost_[p] - time_prefix_[p]; };
    for (std::size_t q = 1; q <= count + 1; ++q) {
      const std::size_t end = q - 1;  // dropped layers [p, end)
      while (next_in <= end) {
        while (!window_.empty() && base(window_.back()) >= base(next_in)) window_.pop_back();
        window_.push_back(next_in++);
      }
      while (byte_prefix_[end] - byte_prefix_[window_.front()] > largest_run) window_.pop_front();
      const std::size_t p = window_.front();  // end itself is always in: an empty gap
      const double keep_cost = q <= count ? price * static_cast<double>(activation_[q - 1]) : 0;
      cost_[q] = base(p) + time_prefix_[end] + keep_cost;
      before_[q] = p;
    }
    std::vector<bool> keep(count, false);
    std::uint64_t kept = 0;
    for (std::size_t p = before_[count + 1]; p > 0; p = before_[p]) {
      keep[p - 1] = true;
      kept = add_or_no_fit(kept, activation_[p - 1]);
    }
    return {std::move(keep), kept};
  }

  double total_seconds() const { return time_prefix_.back(); }

 private:
  std::span<const std::uint64_t> activation_;
  std::vector<std::uint64_t> byte_prefix_;  // saturating
  std::vector<double> time_prefix_;
  std::vector<double> cost_;
  std::vector<std::size_t> before_;
  std::deque<std::size_t> window_;
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

// The bound on the largest dropped run of the leanest plan (least_checkpoint_peak): the
// least of M + fewest_kept_bytes(M) over M, by branch and bound over ranges of M. The
// fewest kept bytes only fall as M rises, so on [lo, hi] no M does better than
// lo + fewest(hi), and where fewest(lo) = fewest(hi) none does better than lo itself.
// (Every run sum as a candidate, sorted, took 4.5 million bounds and most of 3.5 s on a
// 3,000-layer chain.)
std::uint64_t leanest_largest_run(std::span<const std::uint64_t> activation_bytes,
                                  const std::vector<std::uint64_t>& byte_prefix) {
  const auto fewest = [&](std::uint64_t bound) {
    return fewest_kept_bytes(activation_bytes, byte_prefix, bound);
  };
  struct Range {
    std::uint64_t lo, hi, fewest_lo, fewest_hi;
  };
  const std::uint64_t total = byte_prefix.back();
  std::uint64_t leanest = total;  // drop everything: fewest(total) = 0
  std::uint64_t least = total;
  const auto note = [&](std::uint64_t bound, std::uint64_t kept) {
    if (add_or_no_fit(bound, kept) < least) {
      least = add_or_no_fit(bound, kept);
      leanest = bound;
    }
  };
  std::vector<Range> ranges{{0, total, fewest(0), 0}};
  note(0, ranges.back().fewest_lo);
  while (!ranges.empty()) {
    const Range range = ranges.back();
    ranges.pop_back();
    if (range.hi - range.lo <= 1 || range.fewest_lo == range.fewest_hi ||
        add_or_no_fit(range.lo, range.fewest_hi) >= least) {
      continue;
    }
    const std::uint64_t mid = range.lo + (range.hi - range.lo) / 2;
    const std::uint64_t fewest_mid = fewest(mid);
    note(mid, fewest_mid);
    ranges.push_back({mid, range.hi, fewest_mid, range.fewest_hi});
    ranges.push_back({range.lo, mid, range.fewest_lo, fewest_mid});
  }
  return leanest;
}

std::vector<std::uint64_t> byte_prefix_of(std::span<const std::uint64_t> activation_bytes) {
  std::vector<std::uint64_t> byte_prefix{0};
  for (const std::uint64_t bytes : activation_bytes) {
    byte_prefix.push_back(add_or_no_fit(byte_prefix.back(), bytes));
  }
  return byte_prefix;
}

}  // namespace

// For bounds on the largest dropped run evenly spaced up to the budget, then about the
// best, and the leanest plan's: the price at which the priced chain's kept bytes just
// fit beside the bound, by bisection.
std::optional<std::vector<bool>> priced_checkpoints(std::span<const std::uint64_t> activation,
                                                    std::span<const double> seconds,
                                                    std::uint64_t budget) {
  PricedChain chain(activation, seconds);
  std::optional<std::vector<bool>> best;
  Outcome best_outcome;
  std::uint64_t best_bound = 0;
  const auto consider = [&](std::vector<bool> keep, std::uint64_t bound) {
    const Outcome outcome = outcome_of(activation, seconds, keep);
    if (outcome.peak_bytes > budget) return;
    if (!best || outcome.recompute_seconds < best_outcome.recompute_seconds ||
        (outcome.recompute_seconds == best_outcome.recompute_seconds &&
         outcome.peak_bytes < best_outcome.peak_bytes)) {
      best = std::move(keep);
      best_outcome = outcome;
      best_bound = bound;
    }
  };
  const auto try_bound = [&](std::uint64_t largest_run) {
    if (largest_run > budget) return;
    const std::uint64_t room = budget - largest_run;
    // Past this price a kept byte costs more than recomputing everything: the fewest
    // kept bytes.
    double low = 0;
    double high = chain.total_seconds() + 1;
    auto [keep, kept] = chain.cheapest(largest_run, high);
    if (kept > room) return;
    consider(std::move(keep), largest_run);
    for (int step = 0; step < kBisections; ++step) {
      const double price = (low + high) / 2;
      auto [priced, priced_kept] = chain.cheapest(largest_run, price);
      if (priced_kept <= room) {
        high = price;
        consider(std::move(priced), largest_run);
      } else {
        low = price;
      }
    }
  };
  const auto bound_at = [&](double share) {
    return static_cast<std::uint64_t>(static_cast<long double>(budget) * share);
  };
  for (int k = 0; k <= kSegmentBounds; ++k) try_bound(bound_at(double(k) / kSegmentBounds));
  if (best) {
    const double step = 1.0 / kSegmentBounds;
    const double centre = static_cast<double>(static_cast<long double>(best_bound) / budget);
    for (int k = 1; k < kSegmentBounds; ++k) {
      try_bound(bound_at(std::clamp(centre - step + 2 * step * k / kSegmentBounds, 0.0, 1.0)));
    }
  }
  try_bound(leanest_largest_run(activation, byte_prefix_of(activation)));
  return best;
}

std::optional<CheckpointChoice> fastest_checkpoints(std::span<const std::uint64_t> activation_bytes,
                                                    std::span<const double> compute_seconds,
                                                    std::uint64_t budget) {
  CheckpointProgramme programme(activation_bytes, compute_seconds, budget);
  std::optional<CheckpointChoice> choice = programme.solve();
  if ((choice && choice->exhaustive) || (!choice && !programme.gave_up())) return choice;
  // Thinned or given up: the multiplier search's plan when it recomputes less.
  std::optional<std::vector<bool>> priced =
      priced_checkpoints(activation_bytes, compute_seconds, budget);
  if (!priced) return choice;
  if (choice) {
    const Outcome searched = outcome_of(activation_bytes, compute_seconds, choice->keep);
    const Outcome found = outcome_of(activation_bytes, compute_seconds, *priced);
    if (searched.recompute_seconds < found.recompute_seconds ||
        (searched.recompute_seconds == found.recompute_seconds &&
         searched.peak_bytes <= found.peak_bytes)) {
      return choice;
    }
  }
  return CheckpointChoice{std::move(*priced), false};
}

std::uint64_t least_checkpoint_peak(std::span<const std::uint64_t> activation_bytes) {
  const std::vector<std::uint64_t> byte_prefix = byte_prefix_of(activation_bytes);
  const std::uint64_t bound = leanest_largest_run(activation_bytes, byte_prefix);
  return add_or_no_fit(bound, fewest_kept_bytes(activation_bytes, byte_prefix, bound));
}

}  // namespace npumem::plan
