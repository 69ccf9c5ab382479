// The configuration of the virtual NPU, read from a spec string such as
// "sim:hbm=16GiB,ddr=32GiB,backing=host" (every key is in docs/DEVICES.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "npumem/device.h"
#include "npumem/units.h"

namespace npumem {

// Where segment and chunk memory comes from.
enum class Backing : std::uint8_t {
  none,  // unique addresses from a PROT_NONE reservation, no pages: accounting only
  host,  // real host memory (mmap, memfd)
};

std::string_view backing_name(Backing backing);

// The device calls the fault injector may fail.
enum class FaultOp : std::uint8_t {
  segment = 1U << 0,  // allocate_segment
  create = 1U << 1,   // create_physical
  map = 1U << 2,      // map
};

inline constexpr std::uint8_t kAllFaultOps = 0b111;

struct FaultSpec {
  std::uint64_t every = 0;          // fail every Nth eligible call (0: never)
  double probability = 0.0;         // fail each eligible call with this probability
  std::uint64_t seed = 0;           // seeds the probabilistic failures
  std::uint8_t ops = kAllFaultOps;  // which calls are eligible (FaultOp bits)

  bool enabled() const { return every != 0 || probability > 0.0; }
  bool applies_to(FaultOp op) const { return (ops & static_cast<std::uint8_t>(op)) != 0; }
};

struct SimSpec {
  std::uint64_t hbm_bytes = 64 * GiB;  // 0: the tier is absent
  std::uint64_t ddr_bytes = 128 * GiB;
  std::uint64_t hbm_bandwidth = 1'200'000'000'000;  // bytes per second (1.2 TB/s)
  std::uint64_t ddr_bandwidth = 50'000'000'000;     // 50 GB/s
  std::uint64_t granularity = 2 * MiB;              // a power of two, at least the 4 KiB page
  std::uint64_t cache_bytes = 8 * MiB;              // L2: reported, not managed
  Backing backing = Backing::none;
  bool virtual_memory = true;
  std::uint32_t id = 0;
  FaultSpec faults;

  std::uint64_t capacity(Tier tier) const { return tier == Tier::hbm ? hbm_bytes : ddr_bytes; }
  std::uint64_t bandwidth(Tier tier) const {
    return tier == Tier::hbm ? hbm_bandwidth : ddr_bandwidth;
  }
};

// Parses "sim" or "sim:key=value,...". Throws ConfigError naming the bad key or text
// and the accepted values.
SimSpec parse_sim_spec(std::string_view text);

// Throws ConfigError when the spec cannot describe a device (granularity not a power
// of two of at least 4 KiB, no tier at all, probability outside [0, 1]).
void validate_sim_spec(const SimSpec& spec);

// The spec as a string that parse_sim_spec reads back to the same SimSpec.
std::string to_string(const SimSpec& spec);

}  // namespace npumem
