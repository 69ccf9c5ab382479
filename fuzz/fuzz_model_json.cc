// Model files for `plan shard` / `plan recompute`: read or an Error naming the file,
// never a crash, an abort or a stack overflow.
#include <cstdint>
#include <string_view>

#include "npumem/errors.h"
#include "plan_model_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)npumem::cli::parse_model_json(text, "fuzz.json");
  } catch (const npumem::Error&) {
  }
  return 0;
}
