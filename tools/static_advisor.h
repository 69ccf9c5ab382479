// Sizing the static arena from a measured trace: the smallest arena on which the
// trace completes under the static strategy, plus a margin the user chooses. It
// replaces fixed "safety factor" tables with a measurement.
#pragma once

#include <cstdint>

#include "replay.h"
#include "trace.h"

namespace npumem::cli {

struct StaticAdvice {
  std::uint64_t peak_requested_bytes = 0;
  std::uint64_t min_arena_bytes = 0;  // smallest static_size that completes, in device granules
  double margin = 0.0;                // e.g. 0.10 for 10 %
  std::uint64_t recommended_bytes = 0;
};

// Replays `trace` under the static strategy (no fallback) on options.device_spec with
// arenas bisected to the HBM tier's granularity. Throws Error when no arena up to the device's HBM
// works.
StaticAdvice advise_static_size(const Trace& trace, const ReplayOptions& options, double margin);

}  // namespace npumem::cli
