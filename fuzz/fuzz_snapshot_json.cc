// Snapshots for `npumem viz`: a checked snapshot renders, anything else is an Error.
#include <cstdint>
#include <string_view>
#include <vector>

#include "html_timeline.h"
#include "json_text.h"
#include "npumem/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json snapshot;
  try {
    snapshot = npumem::cli::parse_json_text(text, "fuzz.json");
    npumem::cli::check_snapshot(snapshot);
  } catch (const npumem::Error&) {
    return 0;
  } catch (const nlohmann::json::exception&) {
    return 0;  // `npumem viz` reports these as "not an npumem snapshot"
  }
  // A snapshot that passed the check must render: any exception here is a finding.
  (void)npumem::cli::render_html_timeline(std::vector<nlohmann::json>{snapshot}, "fuzz");
  return 0;
}
