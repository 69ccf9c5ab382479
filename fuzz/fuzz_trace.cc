// Allocation traces: parsed or a ParseError naming the line, never a crash.
#include <cstdint>
#include <string_view>

#include "npumem/errors.h"
#include "trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const npumem::cli::Trace trace = npumem::cli::parse_trace(text, "fuzz.trace");
    (void)npumem::cli::peak_live_bytes(trace);
  } catch (const npumem::ParseError&) {
  }
  return 0;
}
