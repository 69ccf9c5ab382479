// The smallest HBM (with no DDR) on which a trace completes, found by bisection over
// replays on the virtual NPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "replay.h"
#include "trace.h"

namespace npumem::cli {

// Bisection resolution.
inline constexpr std::uint64_t kCapacityStep = std::uint64_t{1} << 20;

// `spec` (a sim device spec) with its hbm and ddr keys replaced by hbm=<hbm_bytes>,ddr=0;
// its other keys are kept. Throws ConfigError for a spec that is not a sim device.
std::string hbm_only_spec(std::string_view spec, std::uint64_t hbm_bytes);

// Called before each replay with the HBM capacity it tries.
using CapacityProbe = std::function<void(std::uint64_t hbm_bytes)>;

// Bisects between the trace's peak live bytes (no smaller HBM can hold it) and a
// doubling bound that completes, to kCapacityStep, replaying with options.config on
// hbm_only_spec(options.device_spec, ...). Throws Error when no HBM up to 64 times the
// peak completes the trace (for instance a static arena that is too small).
std::uint64_t min_hbm_capacity(const Trace& trace, const ReplayOptions& options,
                               const CapacityProbe& probe = {});

}  // namespace npumem::cli
