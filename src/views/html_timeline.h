// The memory timeline page of `npumem viz`: one self-contained HTML file (inline
// script and style, no network) drawn from a snapshot (write_snapshot_json): memory
// over time stacked by allocation, the segment map, and the largest live blocks at
// the peak, with the settings that differ from the defaults, a warning when the
// history ring dropped events, and out-of-memory marks. Each pixel column of the
// timeline draws its highest moment, so the drawn peak is the true one. When drawn,
// <body> carries data-rendered="ok", data-plotted=<count of drawn shapes>,
// data-drawn-peak=<highest allocated bytes drawn>, data-pool=<the pool shown, "" for
// all; a selector, or #pool=NAME in the URL, shows one>, data-device=<the index of the
// snapshot drawn; a selector, or #device=N, picks it>, data-ooms=<OOM marks> and
// data-quota=<the quota of the pool shown, drawn as a line; 0 for none or all pools>; a
// script error sets data-rendered="error" and data-error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace npumem::cli {

// Throws Error naming the problem when `snapshot` is not an npumem snapshot.
void check_snapshot(const nlohmann::json& snapshot);

// The page for checked snapshots, one per device (the first is drawn until the device
// selector picks another); `title` names it (e.g. the snapshots' files).
std::string render_html_timeline(const std::vector<nlohmann::json>& snapshots,
                                 const std::string& title);
// The same page around `snapshots_json`, the JSON text of an array of checked snapshots:
// a caller holding the text need not keep the parsed document (3 GB for 300,000 events
// while the page was made from it).
std::string render_html_timeline(std::string_view snapshots_json, const std::string& title);

}  // namespace npumem::cli
