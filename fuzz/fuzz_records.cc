// Lifetime records for `plan memory`: parsed or a ParseError; what parses is planned
// (a few iterations) or refused with an Error, never a crash.
#include <chrono>
#include <cstdint>
#include <string_view>

#include "npumem/errors.h"
#include "npumem/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto tensors = npumem::plan::parse_lifetime_records(text, "fuzz.records");
    if (tensors.size() > 64) return 0;  // planning time grows fast; parsing is the target
    npumem::plan::MemoryPlanOptions options;
    options.max_search_iterations = 4;
    options.time_limit = std::chrono::milliseconds(50);
    const npumem::plan::MemoryPlan plan = npumem::plan::plan_memory(tensors, options);
    if (plan.arena_bytes < plan.lower_bound_bytes) __builtin_trap();
  } catch (const npumem::Error&) {
  }
  return 0;
}
