// NPUMEM_ALLOC_CONF: any text is a Config or a ConfigError, and a Config read
// back from its own text is the same Config.
#include <cstdint>
#include <string_view>

#include "npumem/config.h"
#include "npumem/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  npumem::Config config;
  try {
    config = npumem::parse_config(text);
  } catch (const npumem::ConfigError&) {
    return 0;
  }
  npumem::validate(config);  // what parses is within every bound
  const std::string round_trip = npumem::to_string(npumem::parse_config(npumem::to_string(config)));
  if (round_trip != npumem::to_string(config)) __builtin_trap();
  return 0;
}
