// The memory planner's search: constructive heuristics first (skyline packing with several
// priorities, each without and with its stranding lookahead, then the published greedy
// orders with first-fit and best-fit gaps and first fit in orders of pressure and size), an
// exact branch and bound when the instance is small, on dense mid-size instances a search
// of the instance without its smallest tensors which then fill its gaps, then a randomised
// search over skyline priorities (random restarts, and hill climbing from the best run:
// random moves, or boosts of the tensors it left high) until the lower bound, the deadline
// or the iteration budget. Plans are compacted by mirror compaction: up to a few thousand
// tensors every new best one, and the best plan at the end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/memory/plan_instance.h"
#include "plan/memory/search_clock.h"

namespace npumem::plan {

struct SearchLimits {
  SearchClock* clock = nullptr;  // what the deadline is read from; charged with the work
  SearchClock::time_point deadline;
  std::uint64_t max_iterations = 0;
  std::uint64_t seed = 1;
};

struct Placement {
  std::uint64_t arena = kNoFit;  // kNoFit: no plan below 2^64-1 bytes was found
  std::vector<std::uint64_t> offsets;
  std::string algorithm;
  bool proven_optimal = false;
  std::uint64_t search_iterations = 0;
};

// live: bytes live at each renumbered op (live_bytes_per_op).
Placement search_placement(const PlanInstance& instance, std::span<const std::uint64_t> live,
                           const SearchLimits& limits);

}  // namespace npumem::plan
