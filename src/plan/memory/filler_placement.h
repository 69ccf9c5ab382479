// Fillers: dense sets hold many tensors so small that they matter only as fillers of the
// gaps between the others. The planner can search the instance without them (fewer
// tensors, so quicker runs, and none of them left high at the end) and then place them by
// first fit into the gaps of that plan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/memory/plan_instance.h"
#include "plan/memory/search_clock.h"

namespace npumem::plan {

struct FillerSplit {
  // The instance without its fillers; input_index: each tensor's index in the whole one.
  PlanInstance without_fillers;
  std::vector<std::uint32_t> fillers;  // indices in the whole instance, largest first
};

// The fillers are the smallest tensors that together hold at most `share` of the bytes.
FillerSplit split_fillers(const PlanInstance& instance, double share);

// Writes offsets for the whole instance and returns its arena (kNoFit when an offset would
// reach 2^64-1): the tensors of split.without_fillers by first fit in order of their
// offsets in `plan` (so none moves up), then the fillers by first fit, longest lifetime
// first (ties: largest first).
std::uint64_t place_with_fillers(const PlanInstance& instance, const FillerSplit& split,
                                 std::span<const std::uint64_t> plan,
                                 std::vector<std::uint64_t>& offsets, SearchClock* clock = nullptr);

}  // namespace npumem::plan
