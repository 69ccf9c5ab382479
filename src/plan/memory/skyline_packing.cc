#include "plan/memory/skyline_packing.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace npumem::plan {
namespace {

// Stretches at least this wide search the tree; narrower ones scan their ops, which is
// quicker there.
constexpr std::uint32_t kTreeWidth = 64;
// A placement that strands part of its stretch looks at most this many candidates, best
// first, for one that does not.
constexpr std::size_t kStrandingCandidates = 16;
// The lookahead costs time in proportion to the stretch's width; wider stretches, which
// the first placements of a long iteration see, go without.
constexpr std::uint32_t kLookaheadWidth = 1024;

}  // namespace

SkylinePacker::SkylinePacker(const PlanInstance& instance, std::span<const std::uint64_t> live)
    : instance_(instance), by_first_(instance.tensors.size()), live_(live.begin(), live.end()) {
  std::iota(by_first_.begin(), by_first_.end(), 0u);
  std::stable_sort(by_first_.begin(), by_first_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const PlanTensor& x = instance.tensors[a];
    const PlanTensor& y = instance.tensors[b];
    return x.first != y.first ? x.first < y.first : x.last < y.last;
  });
  for (const std::uint32_t tensor : by_first_) {
    last_by_position_.push_back(instance.tensors[tensor].last);
  }
  group_begin_.assign(instance.op_count + 1, 0);
  for (const PlanTensor& tensor : instance.tensors) ++group_begin_[tensor.first + 1];
  std::partial_sum(group_begin_.begin(), group_begin_.end(), group_begin_.begin());
}

std::uint64_t SkylinePacker::pack(std::span<const double> priorities, std::uint64_t cutoff,
                                  std::vector<std::uint64_t>& offsets, Lookahead lookahead) {
  return pack(priorities, cutoff, offsets, lookahead, {});
}

std::uint64_t SkylinePacker::pack(std::span<const double> priorities, std::uint64_t cutoff,
                                  std::vector<std::uint64_t>& offsets, Lookahead lookahead,
                                  std::span<Checkpoint> checkpoints) {
  offsets.assign(instance_.tensors.size(), 0);
  for (Checkpoint& checkpoint : checkpoints) checkpoint.saved = false;
  if (instance_.tensors.empty()) return 0;
  state_.placed.assign(by_first_.size(), false);
  state_.skyline.assign(1, Stretch{0, instance_.op_count - 1, 0});
  state_.final_heights.assign(live_);
  state_.highest_final = live_.empty() ? 0 : *std::max_element(live_.begin(), live_.end());
  state_.floor = 0;
  state_.scan_from = 0;
  state_.arena = 0;
  state_.unplaced = instance_.tensors.size();
  lookahead_ = lookahead;
  index_priorities(priorities);
  return finish(priorities, cutoff, offsets, checkpoints);
}

std::uint64_t SkylinePacker::resume(const Checkpoint& from, std::span<const double> priorities,
                                    std::uint64_t cutoff, std::vector<std::uint64_t>& offsets,
                                    Lookahead lookahead, std::span<Checkpoint> checkpoints) {
  for (Checkpoint& checkpoint : checkpoints) checkpoint.saved = false;
  state_ = from.state;
  offsets = from.offsets;
  lookahead_ = lookahead;
  if (state_.arena >= cutoff) return state_.arena;
  index_priorities(priorities);
  return finish(priorities, cutoff, offsets, checkpoints);
}

void SkylinePacker::index_priorities(std::span<const double> priorities) {
  best_upto_.assign(by_first_.size(), kNone);
  tree_leaves_ = std::bit_ceil(std::size_t{instance_.op_count});
  tree_.assign(2 * tree_leaves_, kNone);
  steps_ += instance_.op_count;
  for (std::uint32_t op = 0; op < instance_.op_count; ++op) {
    update_best_upto(group_begin_[op], op, priorities);
  }
}

std::uint64_t SkylinePacker::finish(std::span<const double> priorities, std::uint64_t cutoff,
                                    std::vector<std::uint64_t>& offsets,
                                    std::span<Checkpoint> checkpoints) {
  RunState& state = state_;
  while (state.unplaced > 0) {
    ++steps_;
    for (Checkpoint& checkpoint : checkpoints) {
      if (checkpoint.saved || checkpoint.unplaced != state.unplaced) continue;
      checkpoint.state = state;
      checkpoint.offsets = offsets;
      checkpoint.saved = true;
    }
    const std::size_t lowest = lowest_stretch();
    std::size_t candidate = best_candidate(state.skyline[lowest], priorities);
    const Stretch& stretch = state.skyline[lowest];
    if (lookahead_ != Lookahead::none && candidate != kNone &&
        stretch.last - stretch.first < kLookaheadWidth &&
        strands(lowest, candidate, priorities) > 0) {
      candidate = least_stranding_candidate(lowest, priorities);
    }
    if (candidate == kNone) {
      const std::uint64_t final_height = raise_to_neighbour(lowest);
      if (final_height >= cutoff) return final_height;
      continue;
    }
    const std::uint32_t tensor = by_first_[candidate];
    state.placed[candidate] = true;
    update_best_upto(candidate, instance_.tensors[tensor].first, priorities);
    --state.unplaced;
    offsets[tensor] = state.skyline[lowest].height;
    const std::uint64_t end = add_or_no_fit(offsets[tensor], instance_.tensors[tensor].size);
    if (end == kNoFit) return kNoFit;
    state.arena = std::max(state.arena, end);
    if (state.arena >= cutoff) return state.arena;
    place(lowest, tensor);
  }
  return state.arena;
}

std::uint64_t SkylinePacker::strands(std::size_t index, std::size_t position,
                                     std::span<const double> priorities) {
  const Stretch& stretch = state_.skyline[index];
  const PlanTensor& tensor = instance_.tensors[by_first_[position]];
  const std::uint64_t top = add_or_no_fit(stretch.height, tensor.size);
  const std::uint64_t reference = strand_reference();
  std::uint64_t growth = 0;
  // A piece of the stretch beside the tensor that no unplaced tensor fits will be raised
  // to the lower of its sides; how far that takes a final height above the reference.
  auto strand = [&](std::uint32_t first, std::uint32_t last, std::uint64_t side) {
    const std::uint64_t raised = std::min(side, top) - stretch.height;
    const std::uint64_t highest = add_or_no_fit(state_.final_heights.max(first, last), raised);
    if (highest <= add_or_no_fit(reference, growth)) return;
    if (best_candidate(Stretch{first, last, 0}, priorities) != kNone) return;
    growth = highest - reference;
  };
  if (tensor.first > stretch.first) {
    strand(stretch.first, tensor.first - 1, index > 0 ? state_.skyline[index - 1].height : kNoFit);
  }
  if (tensor.last < stretch.last) {
    strand(tensor.last + 1, stretch.last,
           index + 1 < state_.skyline.size() ? state_.skyline[index + 1].height : kNoFit);
  }
  return growth;
}

std::size_t SkylinePacker::least_stranding_candidate(std::size_t index,
                                                     std::span<const double> priorities) {
  const Stretch& stretch = state_.skyline[index];
  // The kStrandingCandidates best unplaced tensors of the stretch, best first. Groups are
  // read best first, and once a group's best fitting tensor is no better than the last
  // candidate, neither it nor any later group holds one.
  group_bests_.clear();
  for (std::uint32_t op = stretch.first; op <= stretch.last; ++op) {
    const std::size_t group_best = best_in_group(op, stretch.last);
    if (group_best != kNone) group_bests_.push_back({group_best, op});
  }
  std::sort(group_bests_.begin(), group_bests_.end(), [&](const GroupBest& a, const GroupBest& b) {
    return better(a.best, b.best, priorities);
  });
  auto position_among_candidates = [&](std::size_t position) {
    return std::upper_bound(candidates_.begin(), candidates_.end(), position,
                            [&](std::size_t a, std::size_t b) { return better(a, b, priorities); });
  };
  candidates_.clear();
  for (const GroupBest& group : group_bests_) {
    if (candidates_.size() == kStrandingCandidates &&
        !better(group.best, candidates_.back(), priorities)) {
      break;
    }
    for (std::size_t i = group_begin_[group.op];
         i < group_begin_[group.op + 1] && last_by_position_[i] <= stretch.last; ++i) {
      if (state_.placed[i]) continue;
      if (candidates_.size() == kStrandingCandidates) {
        if (!better(i, candidates_.back(), priorities)) continue;
        candidates_.pop_back();
      }
      candidates_.insert(position_among_candidates(i), i);
    }
  }
  std::size_t best = kNone;
  std::uint64_t best_growth = kNoFit;
  for (const std::size_t candidate : candidates_) {
    const std::uint64_t growth = strands(index, candidate, priorities);
    if (growth < best_growth) {
      best = candidate;
      best_growth = growth;
    }
    if (growth == 0) break;
  }
  return best;
}

std::size_t SkylinePacker::lowest_stretch() {
  std::size_t lowest = state_.skyline.size();
  for (std::size_t i = state_.scan_from; i < state_.skyline.size(); ++i) {
    if (state_.skyline[i].height == state_.floor) {
      lowest = i;
      break;
    }
  }
  if (lowest == state_.skyline.size()) {  // none is left at the floor: it rises to the least height
    lowest = 0;
    for (std::size_t i = 1; i < state_.skyline.size(); ++i) {
      if (state_.skyline[i].height < state_.skyline[lowest].height) lowest = i;
    }
    state_.floor = state_.skyline[lowest].height;
  }
  // The caller changes this stretch, which may merge it into its left neighbour.
  state_.scan_from = lowest > 0 ? lowest - 1 : 0;
  return lowest;
}

std::size_t SkylinePacker::best_candidate(const Stretch& stretch,
                                          std::span<const double> priorities) const {
  std::size_t best = kNone;
  if (stretch.last - stretch.first >= kTreeWidth) {
    search_tree(1, 0, static_cast<std::uint32_t>(tree_leaves_ - 1), stretch, priorities, best);
    return best;
  }
  for (std::uint32_t op = stretch.first; op <= stretch.last; ++op) {
    const std::size_t candidate = best_in_group(op, stretch.last);
    if (better(candidate, best, priorities)) best = candidate;
  }
  return best;
}

std::size_t SkylinePacker::best_in_group(std::uint32_t op, std::uint32_t last) const {
  const std::size_t begin = group_begin_[op];
  const std::size_t end = group_begin_[op + 1];
  if (begin == end || last_by_position_[begin] > last) return kNone;
  const auto fitting_end =
      std::upper_bound(last_by_position_.begin() + static_cast<std::ptrdiff_t>(begin),
                       last_by_position_.begin() + static_cast<std::ptrdiff_t>(end), last);
  return best_upto_[static_cast<std::size_t>(fitting_end - 1 - last_by_position_.begin())];
}

void SkylinePacker::search_tree(std::size_t node, std::uint32_t low, std::uint32_t high,
                                const Stretch& stretch, std::span<const double> priorities,
                                std::size_t& best) const {
  if (high < stretch.first || low > stretch.last) return;
  const std::size_t subtree_best = tree_[node];
  if (!better(subtree_best, best, priorities)) return;  // nothing here can do better
  if (stretch.first <= low && high <= stretch.last &&
      last_by_position_[subtree_best] <= stretch.last) {
    best = subtree_best;  // it lies within the stretch: the best of the subtree
    return;
  }
  if (low == high) {  // one group
    const std::size_t candidate = best_in_group(low, stretch.last);
    if (better(candidate, best, priorities)) best = candidate;
    return;
  }
  const std::uint32_t middle = low + (high - low) / 2;
  // The child with the better tensor first, so that the bound prunes the other sooner.
  if (better(tree_[2 * node + 1], tree_[2 * node], priorities)) {
    search_tree(2 * node + 1, middle + 1, high, stretch, priorities, best);
    search_tree(2 * node, low, middle, stretch, priorities, best);
  } else {
    search_tree(2 * node, low, middle, stretch, priorities, best);
    search_tree(2 * node + 1, middle + 1, high, stretch, priorities, best);
  }
}

void SkylinePacker::update_best_upto(std::size_t position, std::uint32_t group,
                                     std::span<const double> priorities) {
  const std::size_t begin = group_begin_[group];
  const std::size_t end = group_begin_[group + 1];
  std::size_t best = position > begin ? best_upto_[position - 1] : kNone;
  for (std::size_t i = position; i < end; ++i) {
    if (!state_.placed[i] && better(i, best, priorities)) best = i;
    best_upto_[i] = best;
  }
  std::size_t node = tree_leaves_ + group;
  std::size_t value = end > begin ? best_upto_[end - 1] : kNone;
  // Up to the first node that keeps its tensor: the ones above it keep theirs too.
  while (tree_[node] != value) {
    tree_[node] = value;
    if (node == 1) break;
    node /= 2;
    const std::size_t left = tree_[2 * node];
    const std::size_t right = tree_[2 * node + 1];
    value = better(right, left, priorities) ? right : left;
  }
}

std::uint64_t SkylinePacker::raise_to_neighbour(std::size_t index) {
  // The lowest stretch spans every op only when nothing is left that fits anywhere, which
  // pack() never asks for: some neighbour exists.
  std::uint64_t height = kNoFit;
  if (index > 0) height = state_.skyline[index - 1].height;
  if (index + 1 < state_.skyline.size())
    height = std::min(height, state_.skyline[index + 1].height);
  Stretch& stretch = state_.skyline[index];
  state_.final_heights.add(stretch.first, stretch.last, height - stretch.height);
  const std::uint64_t highest = state_.final_heights.max(stretch.first, stretch.last);
  state_.highest_final = std::max(state_.highest_final, highest);
  stretch.height = height;
  merge_equal_neighbours(index);
  return highest;
}

void SkylinePacker::place(std::size_t index, std::uint32_t tensor) {
  const PlanTensor& planned = instance_.tensors[tensor];
  const Stretch stretch = state_.skyline[index];
  Stretch pieces[3];
  std::size_t count = 0;
  if (planned.first > stretch.first)
    pieces[count++] = {stretch.first, planned.first - 1, stretch.height};
  pieces[count++] = {planned.first, planned.last, stretch.height + planned.size};
  if (planned.last < stretch.last)
    pieces[count++] = {planned.last + 1, stretch.last, stretch.height};
  state_.skyline[index] = pieces[0];
  state_.skyline.insert(state_.skyline.begin() + static_cast<std::ptrdiff_t>(index) + 1, pieces + 1,
                        pieces + count);
  const std::size_t raised = planned.first > stretch.first ? index + 1 : index;
  merge_equal_neighbours(raised);
}

void SkylinePacker::merge_equal_neighbours(std::size_t index) {
  if (index + 1 < state_.skyline.size() &&
      state_.skyline[index + 1].height == state_.skyline[index].height) {
    state_.skyline[index].last = state_.skyline[index + 1].last;
    state_.skyline.erase(state_.skyline.begin() + static_cast<std::ptrdiff_t>(index) + 1);
  }
  if (index > 0 && state_.skyline[index - 1].height == state_.skyline[index].height) {
    state_.skyline[index - 1].last = state_.skyline[index].last;
    state_.skyline.erase(state_.skyline.begin() + static_cast<std::ptrdiff_t>(index));
  }
}

}  // namespace npumem::plan
