#include "plan/skyline_packing.h"

#include <algorithm>
#include <numeric>

namespace npumem::plan {

SkylinePacker::SkylinePacker(const PlanInstance& instance)
    : instance_(instance), by_first_(instance.tensors.size()) {
  std::iota(by_first_.begin(), by_first_.end(), 0u);
  std::stable_sort(by_first_.begin(), by_first_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const PlanTensor& x = instance.tensors[a];
    const PlanTensor& y = instance.tensors[b];
    return x.first != y.first ? x.first < y.first : x.last < y.last;
  });
  group_begin_.assign(instance.op_count + 1, 0);
  for (const PlanTensor& tensor : instance.tensors) ++group_begin_[tensor.first + 1];
  std::partial_sum(group_begin_.begin(), group_begin_.end(), group_begin_.begin());
}

std::uint64_t SkylinePacker::pack(std::span<const double> priorities, std::uint64_t cutoff,
                                  std::vector<std::uint64_t>& offsets) {
  offsets.assign(instance_.tensors.size(), 0);
  if (instance_.tensors.empty()) return 0;
  group_head_.assign(group_begin_.begin(), group_begin_.end() - 1);
  placed_.assign(by_first_.size(), false);
  skyline_.assign(1, Stretch{0, instance_.op_count - 1, 0});
  std::uint64_t arena = 0;
  std::size_t unplaced = instance_.tensors.size();
  while (unplaced > 0) {
    const std::size_t lowest = lowest_stretch();
    const std::size_t candidate = best_candidate(skyline_[lowest], priorities);
    if (candidate == kNone) {
      raise_to_neighbour(lowest);
      continue;
    }
    const std::uint32_t tensor = by_first_[candidate];
    placed_[candidate] = true;
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

std::size_t SkylinePacker::lowest_stretch() const {
  std::size_t lowest = 0;
  for (std::size_t i = 1; i < skyline_.size(); ++i) {
    if (skyline_[i].height < skyline_[lowest].height) lowest = i;
  }
  return lowest;
}

std::size_t SkylinePacker::best_candidate(const Stretch& stretch,
                                          std::span<const double> priorities) {
  std::size_t best = kNone;
  for (std::uint32_t op = stretch.first; op <= stretch.last; ++op) {
    std::size_t& head = group_head_[op];
    while (head < group_begin_[op + 1] && placed_[head]) ++head;
    for (std::size_t i = head; i < group_begin_[op + 1]; ++i) {
      const std::uint32_t tensor = by_first_[i];
      if (instance_.tensors[tensor].last > stretch.last) break;
      if (placed_[i]) continue;
      if (best == kNone || priorities[tensor] > priorities[by_first_[best]]) best = i;
    }
  }
  return best;
}

void SkylinePacker::raise_to_neighbour(std::size_t index) {
  // The lowest stretch spans every op only when nothing is left that fits anywhere, which
  // pack() never asks for: some neighbour exists.
  std::uint64_t height = kNoFit;
  if (index > 0) height = skyline_[index - 1].height;
  if (index + 1 < skyline_.size()) height = std::min(height, skyline_[index + 1].height);
  skyline_[index].height = height;
  merge_equal_neighbours(index);
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
