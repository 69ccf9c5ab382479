// PlannedStats as flat keys, for npumem_stat() and Python's memory_stats().
#include "npumem/allocator.h"

namespace npumem {

std::map<std::string, std::int64_t> PlannedStats::as_map() const {
  const auto value = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  return {{"planned.plans_learned", value(plans_learned)},
          {"planned.plans_kept", value(plans.size())},
          {"planned.arena_bytes", value(arena_bytes)},
          {"planned.hits", value(hits)},
          {"planned.hit_bytes", value(hit_bytes)},
          {"planned.fallbacks", value(fallbacks)},
          {"planned.fallback_bytes", value(fallback_bytes)},
          {"planned.learning", value(learning)},
          {"planned.learning_bytes", value(learning_bytes)},
          {"planned.lasting", value(lasting)},
          {"planned.lasting_bytes", value(lasting_bytes)},
          {"planned.deferred", value(deferred)},
          {"planned.deferred_bytes", value(deferred_bytes)},
          {"planned.steady_peak_reserved_bytes", value(steady_peak_reserved_bytes)},
          {"planned.steady_peak_requested_bytes", value(steady_peak_requested_bytes)}};
}

}  // namespace npumem
