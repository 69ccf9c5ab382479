#include "static_advisor.h"

#include <algorithm>
#include <cmath>

#include "bisect.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

// Arenas are whole device granules: the bisection counts in those.
struct ArenaSteps {
  std::uint64_t step = 1;
  std::uint64_t hbm_steps = 0;  // how many the HBM the allocator may use holds
  std::string hbm_name;         // that HBM, for messages
};

// Up to the device's HBM, or the config's hbm limit when lower: a larger arena is
// refused, so the bisection must not step past it.
ArenaSteps arena_steps(const ReplayOptions& options) {
  const TierInfo hbm = make_device(options.device_spec)->tier_info(Tier::hbm);
  const std::uint64_t step = std::max<std::uint64_t>(hbm.granularity_bytes, 1);
  const std::uint64_t limit = options.config.hbm_limit;
  if (limit != 0 && limit < hbm.capacity_bytes) {
    return {step, limit / step, "the HBM limit (" + format_bytes(limit) + ")"};
  }
  return {step, hbm.capacity_bytes / step,
          "the device's HBM (" + format_bytes(hbm.capacity_bytes) + ")"};
}

}  // namespace

std::uint64_t least_arena_bytes(const ReplayOptions& options) {
  return arena_steps(options).step;
}

namespace {

// At most the HBM the allocator may use: a margin past it advised an arena the device
// refuses, whose error advised --advise again.
std::uint64_t with_margin(std::uint64_t min_bytes, double margin, const ArenaSteps& steps) {
  const double wanted =
      std::ceil(static_cast<double>(min_bytes) * (1.0 + margin) / static_cast<double>(steps.step));
  return std::min(static_cast<std::uint64_t>(wanted), steps.hbm_steps) * steps.step;
}

// The smallest static_size on which `part` (a trace without pools) completes.
std::uint64_t min_arena(const Trace& part, const ReplayOptions& options, const ArenaSteps& steps,
                        const std::string& pool) {
  const auto completes = [&](std::uint64_t count) {
    ReplayOptions probe;
    probe.device_spec = options.device_spec;
    probe.config = options.config;
    probe.config.strategy = Strategy::static_arena;
    probe.config.static_fallback = false;
    probe.config.static_size = count * steps.step;
    return replay_trace(part, probe).completed();
  };
  const std::uint64_t peak_steps = (peak_live_bytes(part) + steps.step - 1) / steps.step;
  const auto found =
      smallest_passing(peak_steps > 0 ? peak_steps - 1 : 0, std::max<std::uint64_t>(peak_steps, 1),
                       steps.hbm_steps, completes);
  if (!found) {
    throw Error("no static arena up to " + steps.hbm_name + " completes the allocations of pool '" +
                pool + "'");
  }
  return *found * steps.step;
}

}  // namespace

std::vector<PoolArenaAdvice> advise_pool_arenas(const Trace& trace, const ReplayOptions& options,
                                                double margin) {
  if (!(margin >= 0.0)) throw ConfigError("--advise margin must be 0 or more");
  const ArenaSteps steps = arena_steps(options);
  std::vector<PoolArenaAdvice> pools;
  for (const std::string& name : trace.pools) {
    if (name == kDefaultPoolName) continue;
    const Trace part = pool_part(trace, name);
    PoolArenaAdvice pool{name, peak_live_bytes(part), min_arena(part, options, steps, name), 0};
    pool.recommended_bytes = with_margin(pool.min_arena_bytes, margin, steps);
    pools.push_back(std::move(pool));
  }
  return pools;
}

std::uint64_t all_arenas_bytes(const StaticAdvice& advice, bool with_margin) {
  std::uint64_t bytes = with_margin ? advice.recommended_bytes : advice.min_arena_bytes;
  for (const PoolArenaAdvice& pool : advice.pools) {
    bytes += with_margin ? pool.recommended_bytes : pool.min_arena_bytes;
  }
  return bytes;
}

std::map<std::string, std::uint64_t> pool_quotas(const std::vector<PoolArenaAdvice>& pools,
                                                 bool with_margin) {
  std::map<std::string, std::uint64_t> quotas;
  for (const PoolArenaAdvice& pool : pools) {
    quotas[pool.pool] = with_margin ? pool.recommended_bytes : pool.min_arena_bytes;
  }
  return quotas;
}

StaticAdvice advise_static_size(const Trace& trace, const ReplayOptions& options, double margin) {
  StaticAdvice advice;
  advice.pools = advise_pool_arenas(trace, options, margin);
  const ArenaSteps steps = arena_steps(options);
  advice.peak_requested_bytes = peak_live_bytes(trace);
  advice.margin = margin;
  advice.min_arena_bytes =
      min_arena(pool_part(trace, kDefaultPoolName), options, steps, kDefaultPoolName);
  // A default pool nothing allocates in keeps the least arena: a margin over nothing
  // recommended a second granule.
  advice.recommended_bytes = allocates_in(trace, kDefaultPoolName)
                                 ? with_margin(advice.min_arena_bytes, margin, steps)
                                 : advice.min_arena_bytes;
  advice.hbm_bytes = steps.hbm_steps * steps.step;
  if (advice.pools.empty()) return advice;
  // Each arena holds its pool; the device must also hold them all at once. Said as a
  // sum: the out-of-memory advice of the replay below ("lower the quota of pool 'enc'")
  // was circular under --advise, which had chosen the smallest quotas itself.
  const std::uint64_t together_bytes = all_arenas_bytes(advice, false);
  if (together_bytes > steps.hbm_steps * steps.step) {
    std::string arenas = "default " + format_bytes(advice.min_arena_bytes);
    for (const PoolArenaAdvice& pool : advice.pools) {
      arenas += ", '" + pool.pool + "' " + format_bytes(pool.min_arena_bytes);
    }
    throw Error("the static arenas need " + format_bytes(together_bytes) + " together (" + arenas +
                "), more than " + steps.hbm_name +
                "; a device with more HBM, or a strategy that shares memory between pools");
  }
  ReplayOptions together;
  together.device_spec = options.device_spec;
  together.config = options.config;
  together.config.strategy = Strategy::static_arena;
  together.config.static_fallback = false;
  together.config.static_size = advice.min_arena_bytes;
  together.pool_quotas = pool_quotas(advice.pools, false);
  const ReplayResult result = replay_trace(trace, together);
  if (!result.completed()) {
    throw Error("each pool's static arena holds its allocations, but together they do not: " +
                *result.out_of_memory);
  }
  return advice;
}

}  // namespace npumem::cli
