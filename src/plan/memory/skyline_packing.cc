#include "plan/memory/skyline_packing.h"

#include <algorithm>
#include <numeric>

namespace npumem::plan {

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
                                  std::vector<std::uint64_t>& offsets) {
  offsets.assign(instance_.tensors.size(), 0);
  if (instance_.tensors.empty()) return 0;
  placed_.assign(by_first_.size(), false);
  best_upto_.assign(by_first_.size(), kNone);
  shortest_last_.assign(instance_.op_count, kNoOp);
  for (std::uint32_t op = 0; op < instance_.op_count; ++op) {
    update_best_upto(group_begin_[op], op, priorities);
  }
  skyline_.assign(1, Stretch{0, instance_.op_count - 1, 0});
  final_height_ = live_;
  floor_ = 0;
  scan_from_ = 0;
  std::uint64_t arena = 0;
  std::size_t unplaced = instance_.tensors.size();
  while (unplaced > 0) {
    const std::size_t lowest = lowest_stretch();
    const std::size_t candidate = best_candidate(skyline_[lowest], priorities);
    if (candidate == kNone) {
      const std::uint64_t final_height = raise_to_neighbour(lowest);
      if (final_height >= cutoff) return final_height;
      continue;
    }
    const std::uint32_t tensor = by_first_[candidate];
    placed_[candidate] = true;
    update_best_upto(candidate, instance_.tensors[tensor].first, priorities);
    --unplaced;
    offsets[tensor] = skyline_[lowest].height;
    const std::uint64_t end = add_or_no_fit(offsets[tensor], instance_.tensors[tensor].size);
    if (end == kNoFit) return kNoFit;
    arena = std::max(arena, end);
    if (arena >= cutoff) return arena;
    place(lowest, tensor);
  }
  return arena;
}

std::size_t SkylinePacker::lowest_stretch() {
  std::size_t lowest = skyline_.size();
  for (std::size_t i = scan_from_; i < skyline_.size(); ++i) {
    if (skyline_[i].height == floor_) {
      lowest = i;
      break;
    }
  }
  if (lowest == skyline_.size()) {  // none is left at the floor: it rises to the least height
    lowest = 0;
    for (std::size_t i = 1; i < skyline_.size(); ++i) {
      if (skyline_[i].height < skyline_[lowest].height) lowest = i;
    }
    floor_ = skyline_[lowest].height;
  }
  // The caller changes this stretch, which may merge it into its left neighbour.
  scan_from_ = lowest > 0 ? lowest - 1 : 0;
  return lowest;
}

std::size_t SkylinePacker::best_candidate(const Stretch& stretch,
                                          std::span<const double> priorities) const {
  std::size_t best = kNone;
  for (std::uint32_t op = stretch.first; op <= stretch.last; ++op) {
    if (shortest_last_[op] > stretch.last) continue;
    const auto group_begin =
        last_by_position_.begin() + static_cast<std::ptrdiff_t>(group_begin_[op]);
    const auto group_end =
        last_by_position_.begin() + static_cast<std::ptrdiff_t>(group_begin_[op + 1]);
    const auto fitting_end = std::upper_bound(group_begin, group_end, stretch.last);
    if (fitting_end == group_begin) continue;
    const std::size_t candidate =
        best_upto_[static_cast<std::size_t>(fitting_end - 1 - last_by_position_.begin())];
    if (candidate == kNone) continue;
    if (best == kNone || priorities[by_first_[candidate]] > priorities[by_first_[best]]) {
      best = candidate;
    }
  }
  return best;
}

void SkylinePacker::update_best_upto(std::size_t position, std::uint32_t group,
                                     std::span<const double> priorities) {
  std::size_t best = position > group_begin_[group] ? best_upto_[position - 1] : kNone;
  for (std::size_t i = position; i < group_begin_[group + 1]; ++i) {
    if (!placed_[i] && (best == kNone || priorities[by_first_[i]] > priorities[by_first_[best]])) {
      best = i;
    }
    best_upto_[i] = best;
  }
  // Entries are sorted by last op, so the first unplaced one is the shortest.
  shortest_last_[group] = kNoOp;
  for (std::size_t i = group_begin_[group]; i < group_begin_[group + 1]; ++i) {
    if (placed_[i]) continue;
    shortest_last_[group] = last_by_position_[i];
    break;
  }
}

std::uint64_t SkylinePacker::raise_to_neighbour(std::size_t index) {
  // The lowest stretch spans every op only when nothing is left that fits anywhere, which
  // pack() never asks for: some neighbour exists.
  std::uint64_t height = kNoFit;
  if (index > 0) height = skyline_[index - 1].height;
  if (index + 1 < skyline_.size()) height = std::min(height, skyline_[index + 1].height);
  Stretch& stretch = skyline_[index];
  const std::uint64_t given_up = height - stretch.height;
  std::uint64_t highest = 0;
  for (std::uint32_t op = stretch.first; op <= stretch.last; ++op) {
    final_height_[op] = add_or_no_fit(final_height_[op], given_up);
    highest = std::max(highest, final_height_[op]);
  }
  stretch.height = height;
  merge_equal_neighbours(index);
  return highest;
}

void SkylinePacker::place(std::size_t index, std::uint32_t tensor) {
  const PlanTensor& planned = instance_.tensors[tensor];
  const Stretch stretch = skyline_[index];
  Stretch pieces[3];
  std::size_t count = 0;
  if (planned.first > stretch.first)
    pieces[count++] = {stretch.first, planned.first - 1, stretch.height};
  pieces[count++] = {planned.first, planned.last, stretch.height + planned.size};
  if (planned.last < stretch.last)
    pieces[count++] = {planned.last + 1, stretch.last, stretch.height};
  skyline_[index] = pieces[0];
  skyline_.insert(skyline_.begin() + static_cast<std::ptrdiff_t>(index) + 1, pieces + 1,
                  pieces + count);
  const std::size_t raised = planned.first > stretch.first ? index + 1 : index;
  merge_equal_neighbours(raised);
}

void SkylinePacker::merge_equal_neighbours(std::size_t index) {
  if (index + 1 < skyline_.size() && skyline_[index + 1].height == skyline_[index].height) {
    skyline_[index].last = skyline_[index + 1].last;
    skyline_.erase(skyline_.begin() + static_cast<std::ptrdiff_t>(index) + 1);
  }
  if (index > 0 && skyline_[index - 1].height == skyline_[index].height) {
    skyline_[index - 1].last = skyline_[index].last;
    skyline_.erase(skyline_.begin() + static_cast<std::ptrdiff_t>(index));
  }
}

}  // namespace npumem::plan
