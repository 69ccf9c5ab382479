// Allocator settings. One name per knob, the same in C++, C, Python, NPUMEM_ALLOC_CONF
// ("key:value,key:value") and the CLI's --conf.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace npumem {

enum class Strategy : std::uint8_t {
  caching,       // grow by device segments, keep them cached
  expandable,    // one VA range per pool and tier, grown and shrunk by mapping granules
  static_arena,  // one arena reserved up front; no device call afterwards
  planned        // an arena laid out from plans learned on earlier iterations; caching otherwise
};

std::string_view strategy_name(Strategy strategy);

// What the expandable strategy becomes on a device without virtual-memory calls
// (the seeds' "expandable_segments feature is not supported" NPU).
enum class ExpandableFallback : std::uint8_t {
  automatic,  // static when static_size is set, else caching
  caching,
  static_arena  // the seeds' driver: one arena of static_size
};

std::string_view expandable_fallback_name(ExpandableFallback fallback);

// Where the planned strategy puts what no plan serves: the learning iterations, the
// tensors that outlive an iteration, mismatches.
enum class PlannedFallback : std::uint8_t {
  automatic,  // expandable on a device with virtual-memory calls, else caching
  caching,
  expandable  // packed granules: learning costs about what the expandable strategy does
};

std::string_view planned_fallback_name(PlannedFallback fallback);

struct Config {
  Strategy strategy = Strategy::caching;
  // Requests are rounded up to a multiple of this (a power of two, >= 64).
  std::uint64_t granule = 512;
  // Requests up to this size are served from the small pool.
  std::uint64_t small_size = 1 << 20;
  // Segment sizes of the caching strategy: small pool, and large requests below
  // large_segment_threshold; larger requests get a segment rounded to small_segment.
  std::uint64_t small_segment = 2 << 20;
  std::uint64_t large_segment = 20 << 20;
  std::uint64_t large_segment_threshold = 10 << 20;
  // Use the DDR tier when HBM cannot serve a request.
  bool spill_to_ddr = true;
  // Cached blocks this large are never split and serve only requests of about their
  // size (PyTorch's max_split_size_mb); a segment made for a request still serves it.
  // For segments made per request: expandable ranges and the static arena ignore it.
  std::uint64_t max_split_size = std::numeric_limits<std::uint64_t>::max();
  // Fraction of the tier limit above which free cached segments are released
  // before growing (PyTorch's garbage_collection_threshold); 0 disables it.
  double garbage_collection_threshold = 0.0;
  // Expandable strategy: physical granule sizes for the small and large pools. Equal
  // (the default: the usual 2 MiB device granularity), one range serves both kinds and
  // a small block may fill the rest of a large block's last granule.
  std::uint64_t expandable_small_granule = 2 << 20;
  std::uint64_t expandable_large_granule = 2 << 20;
  // Static strategy: arena size per tier use (HBM first), and fallback to caching.
  std::uint64_t static_size = 0;
  bool static_fallback = false;
  ExpandableFallback expandable_fallback = ExpandableFallback::automatic;
  PlannedFallback planned_fallback = PlannedFallback::automatic;
  // Planned strategy: the plans it keeps (a shape or key each); past it, the least
  // recently used plan goes. 1 to kMaxPlannedPlans.
  std::uint32_t planned_max_plans = 8;
  // Limits on the bytes this allocator may reserve per tier (0: the tier's capacity).
  std::uint64_t hbm_limit = 0;
  std::uint64_t ddr_limit = 0;
};

inline constexpr std::uint32_t kMaxPlannedPlans = 256;

// Parses "key:value,key:value" over the defaults in `base`. Throws ConfigError naming
// the key and the accepted values on an unknown key or a bad value, and naming both
// when two settings do not go together (validate). A key given twice takes its last
// value, as PYTORCH_CUDA_ALLOC_CONF does (`expandable_segments:True,...,False`).
Config parse_config(std::string_view text, Config base = {});
// Throws ConfigError naming the first size setting outside its accepted range, or two
// that do not go together: max_split_size must be larger than large_segment (for a
// Config built in code; parse_config checks each key as it reads it, then these).
void validate(const Config& config);
// The settings as a config string that parse_config reads back to the same Config.
std::string to_string(const Config& config);
// Reads NPUMEM_ALLOC_CONF from the environment (defaults when unset).
Config config_from_environment();
// `conf` over NPUMEM_ALLOC_CONF. A key `conf` sets is not read from the environment, so
// a bad value there does not stand in the way of the setting that replaces it. A bad
// setting throws ConfigError that begins with where it came from: "NPUMEM_ALLOC_CONF: "
// or `conf_name` (e.g. "--conf: ").
Config config_over_environment(std::string_view conf, std::string_view conf_name);

}  // namespace npumem
