#include "min_capacity.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "bisect.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

// Upper bound of the search: this multiple of the peak live bytes, or kMaxSearched when
// larger. Segments are reserved per pool and pool kind, so a trace of many pools with
// small tensors needs far more than its live bytes (40 pools of 4 KiB: 80 MiB of 2 MiB
// segments, against 64x 160 KiB).
constexpr std::uint64_t kMaxOverPeak = 64;
constexpr std::uint64_t kMaxSearched = std::uint64_t{1} << 40;

std::string_view spec_key(std::string_view item) {
  std::string_view key = item.substr(0, item.find('='));
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  return key;
}

// fail_every or fail_prob at a value other than 0: fail_ops and seed only choose what
// would fail, and inject nothing alone.
bool injects_faults(std::string_view item) {
  const std::string_view key = spec_key(item);
  if (key != "fail_every" && key != "fail_prob") return false;
  const std::size_t equals = item.find('=');
  if (equals == std::string_view::npos) return false;
  return std::strtod(std::string(item.substr(equals + 1)).c_str(), nullptr) != 0.0;
}

bool completes(const Trace& trace, const ReplayOptions& options, std::uint64_t steps,
               const CapacityProbe& probe) {
  const std::uint64_t hbm_bytes = steps * kCapacityStep;
  if (probe) probe(hbm_bytes);
  ReplayOptions probe_options;
  probe_options.device_spec = hbm_only_spec(options.device_spec, hbm_bytes);
  probe_options.config = options.config;
  // The probe's device is the HBM searched for: a tier limit from the settings would cap
  // every probe below it (compare with hbm:1GiB found no HBM up to 197 GiB).
  probe_options.config.hbm_limit = 0;
  probe_options.config.ddr_limit = 0;
  probe_options.pool_quotas = options.pool_quotas;
  // A static arena larger than this HBM is refused at the start: not completed.
  return replay_trace(trace, probe_options).completed();
}

}  // namespace

std::string hbm_only_spec(std::string_view spec, std::uint64_t hbm_bytes) {
  const std::size_t colon = spec.find(':');
  if (spec.substr(0, colon) != "sim") {
    throw ConfigError(
        "finding the smallest HBM that completes a trace needs a sim device "
        "spec (its hbm is varied), not '" +
        std::string(spec) + "'");
  }
  std::string result = "sim:hbm=" + std::to_string(hbm_bytes) + ",ddr=0";
  std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (injects_faults(item)) {
      throw ConfigError(
          "finding the smallest HBM that completes a trace needs a device "
          "without injected faults, which fail its probes at random: '" +
          std::string(spec) + "' injects faults (" + std::string(item) + ")");
    }
    if (!item.empty() && spec_key(item) != "hbm" && spec_key(item) != "ddr") {
      result += "," + std::string(item);
    }
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  }
  return result;
}

std::uint64_t min_hbm_capacity(const Trace& trace, const ReplayOptions& options,
                               const CapacityProbe& probe) {
  const std::uint64_t peak_steps =
      std::max<std::uint64_t>(1, (peak_live_bytes(trace) + kCapacityStep - 1) / kCapacityStep);
  const std::uint64_t max_steps =
      std::min(std::max(peak_steps * kMaxOverPeak, kMaxSearched / kCapacityStep),
               std::numeric_limits<std::uint64_t>::max() / kCapacityStep);
  const auto steps = smallest_passing(peak_steps - 1, peak_steps, max_steps, [&](std::uint64_t n) {
    return completes(trace, options, n, probe);
  });
  if (!steps) {
    const bool by_peak = max_steps == peak_steps * kMaxOverPeak;
    throw Error("the trace does not complete on any HBM up to " +
                format_bytes(max_steps * kCapacityStep) +
                (by_peak ? " (" + std::to_string(kMaxOverPeak) + "x its peak of live bytes)" : ""));
  }
  return *steps * kCapacityStep;
}

}  // namespace npumem::cli
