// Mirror compaction: lowers a plan's arena by placing its tensors again by first fit, in
// order of how far their tops sit below the arena, so the plan is rebuilt upside down
// (the tensors that were highest go to the bottom). First fit in order of offset moves no
// tensor up (each one's old place is still free of those placed before it, which only
// moved down), and in the mirrored plan that means no tensor's top rises: a pass never
// raises the arena, and the tensors left high by a packing that worked bottom-up sink
// into the gaps below them. Passes alternate the plan's orientation until they stop
// gaining (the "jostle" heuristic of strip packing, applied to lifetimes).
#pragma once

#include <cstdint>
#include <vector>

#include "plan/memory/plan_instance.h"
#include "plan/memory/search_clock.h"

namespace npumem::plan {

// Mirrored first-fit passes over a valid plan (offsets, arena) of the instance until two
// in a row leave the arena as it is, max_passes have run, or the next pass would end past
// the deadline (foreseen as long as the longest pass so far); offsets then
// hold a plan of the returned arena, no larger than the given one (kNoFit when an offset
// would reach 2^64-1, which a valid plan never leads to). Deterministic until the
// deadline. When longest_pass is given, it receives the longest pass's time (zero when
// none ran).
std::uint64_t compact_by_mirroring(const PlanInstance& instance,
                                   std::vector<std::uint64_t>& offsets, std::uint64_t arena,
                                   std::uint64_t max_passes, SearchClock& clock,
                                   SearchClock::time_point deadline,
                                   SearchClock::duration* longest_pass = nullptr);

// A step of a local search over compacted plans: one mirrored first-fit pass of the plan
// in `offsets` in which the tensors whose tops reach above `kicked_above` go last (so the
// tensors at the top, often long-lived ones that rest on a tall chain, take whatever gaps
// the others leave), then compact_by_mirroring. Unlike a compaction pass it may raise the
// arena: returns the arena of the plan it leaves in `offsets` (kNoFit, offsets untouched,
// when an offset would reach 2^64-1).
std::uint64_t kick_and_compact(const PlanInstance& instance, std::vector<std::uint64_t>& offsets,
                               std::uint64_t kicked_above, std::uint64_t max_passes,
                               SearchClock& clock, SearchClock::time_point deadline);

}  // namespace npumem::plan
