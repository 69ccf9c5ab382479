// The memory timeline page of `npumem viz`: one self-contained HTML file (inline
// script and style, no network) drawn from a snapshot (write_snapshot_json): memory
// over time stacked by allocation, the segment map, and the largest live blocks at
// the peak, with the settings that differ from the defaults, a warning when the
// history ring dropped events, and out-of-memory marks. Each pixel column of the
// timeline draws its highest moment, so the drawn peak is the true one. When drawn,
// <body> carries data-rendered="ok", data-plotted=<count of drawn shapes>,
// data-drawn-peak=<highest allocated bytes drawn>, data-pool=<the pool shown, "" for
// all; a selector, or #pool=NAME in the URL, shows one> and data-ooms=<OOM marks>; a script
// error sets data-rendered="error" and data-error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace npumem::cli {

// Throws Error naming the problem when `snapshot` is not an npumem snapshot.
void check_snapshot(const nlohmann::json& snapshot);

// The page for a checked snapshot; `title` names it (e.g. the snapshot's file).
std::string render_html_timeline(const nlohmann::json& snapshot, const std::string& title);

}  // namespace npumem::cli
