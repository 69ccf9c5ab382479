// Recompute (checkpoint) plans for training a chain of layers.
//
// A plan keeps some layer outputs; the dropped ones form segments, each recomputed once in
// the backward pass from the kept output before it. Peak = kept bytes + largest segment's
// bytes; recompute time = forward time of the dropped layers. plan_recompute minimises the
// recompute time under the budget exactly: a dynamic programme over the last kept layer,
// whose states are the Pareto-best (kept bytes, largest segment, recompute time) triples
// of the plans reaching it.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "npumem/units.h"
#include "plan/plan_instance.h"

namespace npumem::plan {
namespace {

// One Pareto-best plan prefix that keeps layer `position - 1` (position 0: nothing kept
// yet, the model input).
struct Label {
  std::uint64_t kept_bytes = 0;
  std::uint64_t largest_segment = 0;
  double recompute_seconds = 0;
  std::size_t previous_position = 0;  // the label it extends: fronts_[previous_position]
  std::size_t previous_label = 0;     // ... [previous_label]
};

std::uint64_t peak_of(const Label& label) {
  return add_or_no_fit(label.kept_bytes, label.largest_segment);
}

// Keeps the labels no other label beats in all three figures.
std::vector<Label> pareto_front(std::vector<Label> labels) {
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) {
    if (a.recompute_seconds != b.recompute_seconds)
      return a.recompute_seconds < b.recompute_seconds;
    if (a.kept_bytes != b.kept_bytes) return a.kept_bytes < b.kept_bytes;
    return a.largest_segment < b.largest_segment;
  });
  // Staircase of the kept labels (no slower than the current one): kept bytes -> largest
  // segment, the segment falling as kept bytes rise.
  std::map<std::uint64_t, std::uint64_t> staircase;
  std::vector<Label> front;
  for (const Label& label : labels) {
    auto next = staircase.upper_bound(label.kept_bytes);
    if (next != staircase.begin() && std::prev(next)->second <= label.largest_segment) continue;
    while (next != staircase.end() && next->second >= label.largest_segment) {
      next = staircase.erase(next);
    }
    staircase[label.kept_bytes] = label.largest_segment;
    front.push_back(label);
  }
  return front;
}

class RecomputeProgramme {
 public:
  RecomputeProgramme(std::span<const Layer> layers, const std::vector<double>& compute,
                     std::uint64_t budget)
      : budget_(budget), fronts_(layers.size() + 1) {
    byte_prefix_.push_back(0);
    time_prefix_.push_back(0);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      activation_.push_back(layers[i].activation_bytes);
      byte_prefix_.push_back(add_or_no_fit(byte_prefix_.back(), layers[i].activation_bytes));
      time_prefix_.push_back(time_prefix_.back() + compute[i]);
    }
    fronts_[0].push_back(Label{});
  }

  // The keep flags of the fastest plan within budget, or none when no plan fits.
  std::optional<std::vector<bool>> solve() {
    for (std::size_t position = 1; position < fronts_.size(); ++position) {
      fronts_[position] = pareto_front(extensions(position, true));
    }
    const std::vector<Label> finals = extensions(fronts_.size(), false);
    const Label* best = nullptr;
    for (const Label& label : finals) {
      if (best == nullptr || label.recompute_seconds < best->recompute_seconds ||
          (label.recompute_seconds == best->recompute_seconds && peak_of(label) < peak_of(*best))) {
        best = &label;
      }
    }
    if (best == nullptr) return std::nullopt;
    return keep_flags(*best);
  }

 private:
  // The labels that keep layer `position - 1` (keep_layer), or that end the chain
  // (position = layer count + 1, !keep_layer): each label of an earlier position extended
  // over the layers dropped in between.
  std::vector<Label> extensions(std::size_t position, bool keep_layer) const {
    const std::size_t segment_end = position - 1;  // dropped layers: [from, segment_end)
    const std::uint64_t kept = keep_layer ? activation_[segment_end] : 0;
    std::vector<Label> labels;
    for (std::size_t from = segment_end + 1; from-- > 0;) {
      const std::uint64_t segment_bytes = bytes(from, segment_end);
      if (segment_bytes > budget_) break;  // longer segments only grow
      const double segment_seconds = time_prefix_[segment_end] - time_prefix_[from];
      for (std::size_t index = 0; index < fronts_[from].size(); ++index) {
        const Label& previous = fronts_[from][index];
        Label label;
        label.kept_bytes = add_or_no_fit(previous.kept_bytes, kept);
        label.largest_segment = std::max(previous.largest_segment, segment_bytes);
        label.recompute_seconds = previous.recompute_seconds + segment_seconds;
        label.previous_position = from;
        label.previous_label = index;
        if (peak_of(label) <= budget_) labels.push_back(label);
      }
    }
    return labels;
  }

  std::uint64_t bytes(std::size_t first, std::size_t end) const {
    if (byte_prefix_[end] == kNoFit) return kNoFit;
    return byte_prefix_[end] - byte_prefix_[first];
  }

  std::vector<bool> keep_flags(const Label& final_label) const {
    std::vector<bool> keep(activation_.size(), false);
    std::size_t position = final_label.previous_position;
    std::size_t index = final_label.previous_label;
    while (position > 0) {
      keep[position - 1] = true;
      const Label& label = fronts_[position][index];
      position = label.previous_position;
      index = label.previous_label;
    }
    return keep;
  }

  std::uint64_t budget_;
  std::vector<std::uint64_t> activation_;
  std::vector<std::uint64_t> byte_prefix_;  // saturating
  std::vector<double> time_prefix_;
  std::vector<std::vector<Label>> fronts_;  // [position]: labels keeping layer position - 1
};

// The least peak of any plan: the programme with every time zero and no budget, whose
// fastest plan (all tie at zero) is then the leanest.
std::uint64_t least_peak(std::span<const Layer> layers) {
  const std::vector<double> no_time(layers.size(), 0.0);
  RecomputeProgramme programme(layers, no_time, kNoFit);
  std::vector<bool> keep = programme.solve().value();
  return evaluate_checkpoints(layers, std::move(keep), LayerTiming{}).peak_bytes;
}

}  // namespace

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
  RecomputeProgramme programme(layers, compute, options.activation_budget_bytes);
  std::optional<std::vector<bool>> keep = programme.solve();
  if (!keep) {
    const std::uint64_t needed = least_peak(layers);
    throw OutOfMemory("no recompute plan fits an activation budget of " +
                          format_bytes(options.activation_budget_bytes) +
                          ": the leanest plan needs " + format_bytes(needed),
                      needed, "activations");
  }
  return evaluate_checkpoints(layers, std::move(*keep), options.timing);
}

}  // namespace npumem::plan
