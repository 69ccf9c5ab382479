// Sizing the static arena from a measured trace: the smallest arena on which the
// trace completes under the static strategy, plus a margin the user chooses. It
// replaces fixed "safety factor" tables with a measurement.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "replay.h"
#include "trace.h"

namespace npumem::cli {

// The arena of one pool: the smallest on which the pool's part of the trace completes.
struct PoolArenaAdvice {
  std::string pool;
  std::uint64_t peak_requested_bytes = 0;  // of the pool's own allocations
  std::uint64_t min_arena_bytes = 0;       // in device granules
  std::uint64_t recommended_bytes = 0;     // with the margin
};

struct StaticAdvice {
  std::uint64_t peak_requested_bytes = 0;
  std::uint64_t min_arena_bytes = 0;  // smallest static_size that completes, in device granules
  double margin = 0.0;                // e.g. 0.10 for 10 %
  // min_arena_bytes with the margin, in granules, but at most hbm_bytes.
  std::uint64_t recommended_bytes = 0;
  std::uint64_t hbm_bytes = 0;  // the HBM the allocator may use on the device
  // Whether the margin was cut to fit hbm_bytes.
  bool margin_cut() const { return recommended_bytes == hbm_bytes && margin > 0.0; }
  // The trace's named pools (`p` lines): under the static strategy each has its own
  // arena, sized by its quota.
  std::vector<PoolArenaAdvice> pools;
};

// Replays `trace` under the static strategy (no fallback) on options.device_spec with
// arenas bisected to the HBM tier's granularity: the default pool's (static_size) and
// each named pool's (its quota), each pool's part of the trace on its own; then checks
// that the arenas together complete the trace. Throws Error when no arena up to the
// device's HBM holds a pool, or the arenas together do not fit the device.
StaticAdvice advise_static_size(const Trace& trace, const ReplayOptions& options, double margin);

// The default pool's arena and every named pool's together, smallest or with the margin:
// the HBM the static strategy takes for the trace.
std::uint64_t all_arenas_bytes(const StaticAdvice& advice, bool with_margin);

// The arenas of the trace's named pools alone (what a static replay needs as quotas).
std::vector<PoolArenaAdvice> advise_pool_arenas(const Trace& trace, const ReplayOptions& options,
                                                double margin);

// The least a static arena can be on options.device_spec: one HBM granule.
std::uint64_t least_arena_bytes(const ReplayOptions& options);

// Pool quotas for ReplayOptions::pool_quotas: each pool's minimal arena, or the
// recommended one with the margin.
std::map<std::string, std::uint64_t> pool_quotas(const std::vector<PoolArenaAdvice>& pools,
                                                 bool with_margin);

}  // namespace npumem::cli
