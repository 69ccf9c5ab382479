#include "static_advisor.h"

#include <algorithm>
#include <cmath>

#include "bisect.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {

StaticAdvice advise_static_size(const Trace& trace, const ReplayOptions& options, double margin) {
  if (!(margin >= 0.0)) throw ConfigError("--advise margin must be 0 or more");
  StaticAdvice advice;
  advice.peak_requested_bytes = peak_live_bytes(trace);
  advice.margin = margin;
  // Arenas are whole device granules: bisect in those.
  const TierInfo hbm = make_device(options.device_spec)->tier_info(Tier::hbm);
  const std::uint64_t arena_step = std::max<std::uint64_t>(hbm.granularity_bytes, 1);
  const std::uint64_t hbm_steps = hbm.capacity_bytes / arena_step;
  const auto completes = [&](std::uint64_t steps) {
    ReplayOptions probe;
    probe.device_spec = options.device_spec;
    probe.config = options.config;
    probe.config.strategy = Strategy::static_arena;
    probe.config.static_fallback = false;
    probe.config.static_size = steps * arena_step;
    try {
      return replay_trace(trace, probe).completed();
    } catch (const OutOfMemory&) {
      return false;  // the arena does not fit the device
    }
  };
  const std::uint64_t peak_steps = (advice.peak_requested_bytes + arena_step - 1) / arena_step;
  const auto steps = smallest_passing(peak_steps > 0 ? peak_steps - 1 : 0,
                                      std::max<std::uint64_t>(peak_steps, 1), hbm_steps, completes);
  if (!steps) {
    throw Error("no static arena up to the device's HBM (" + format_bytes(hbm_steps * arena_step) +
                ") completes the trace");
  }
  advice.min_arena_bytes = *steps * arena_step;
  const double recommended = std::ceil(static_cast<double>(advice.min_arena_bytes) *
                                       (1.0 + margin) / static_cast<double>(arena_step));
  advice.recommended_bytes = static_cast<std::uint64_t>(recommended) * arena_step;
  return advice;
}

}  // namespace npumem::cli
