// Device specs (sim:hbm=...,faults=...): any text is a SimSpec or a ConfigError, a
// parsed spec is valid, and it reads back from its own text unchanged.
#include <cstdint>
#include <string_view>

#include "device/sim/sim_spec.h"
#include "npumem/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  npumem::SimSpec spec;
  try {
    spec = npumem::parse_sim_spec(text);
  } catch (const npumem::ConfigError&) {
    return 0;
  }
  npumem::validate_sim_spec(spec);
  const std::string once = npumem::to_string(spec);
  if (npumem::to_string(npumem::parse_sim_spec(once)) != once) __builtin_trap();
  return 0;
}
