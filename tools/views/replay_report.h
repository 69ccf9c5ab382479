// How `npumem replay` shows a ReplayResult: one JSON object, or a readable table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "replay.h"
#include "static_advisor.h"

namespace npumem::cli {

struct ReplayReport {
  std::string trace_path;
  ReplayResult result;
  std::optional<std::uint64_t> min_hbm_capacity_bytes;  // when --min-capacity was given
  std::optional<StaticAdvice> static_advice;            // when --advise was given
  // When --advise found no static arena for the trace (the replay itself may complete).
  std::string static_advice_failure;
};

// Keys in reading order; "pools" only when the trace used named pools.
nlohmann::ordered_json replay_report_json(const ReplayReport& report);

// The table, one figure per line, sizes via format_bytes; ends with a newline.
std::string replay_report_text(const ReplayReport& report);

}  // namespace npumem::cli
