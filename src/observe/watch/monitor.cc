#include "npumem/monitor.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "npumem/text_cell.h"
#include "npumem/units.h"
#include "observe/watch/usage.h"
#include "util/untrusted_text.h"

namespace npumem {
namespace {

constexpr std::size_t kLabelWidth = 20;
constexpr std::size_t kNumberWidth = 13;

std::string seconds_between(std::chrono::system_clock::time_point from,
                            std::chrono::system_clock::time_point to) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", std::chrono::duration<double>(to - from).count());
  return text;
}

}  // namespace

LabelledSnapshot Monitor::snapshot(std::string label) {
  const Stats stats = allocator_.stats();
  LabelledSnapshot& taken = snapshots_.emplace_back();
  taken.label = std::move(label);
  taken.time = std::chrono::system_clock::now();
  taken.total = observe::total_usage(stats);
  for (const Tier tier : kAllTiers) {
    taken.tiers[static_cast<std::size_t>(tier)] = observe::tier_usage(stats, tier);
  }
  return taken;
}

std::string Monitor::report() const {
  if (snapshots_.empty()) return "no snapshots\n";
  using npumem::pad_left;
  using npumem::pad_right;
  // Labels are the caller's text: a tab or newline would break the table, shown escaped;
  // the column is as wide as the widest.
  std::vector<std::string> labels;
  std::size_t label_width = kLabelWidth;
  for (const LabelledSnapshot& s : snapshots_) {
    labels.push_back(util::escaped_for_display(s.label));
    label_width = std::max(label_width, npumem::display_width(labels.back()) + 2);
  }
  std::ostringstream out;
  out << "memory report (" << allocator_.device().name() << ")\n"
      << pad_right("label", label_width) << pad_left("allocated", kNumberWidth)
      << pad_left("reserved", kNumberWidth) << pad_left("peak", kNumberWidth)
      << pad_left("time (s)", kNumberWidth) << "\n"
      << std::string(label_width + 4 * kNumberWidth, '-') << "\n";
  for (std::size_t i = 0; i < snapshots_.size(); ++i) {
    const LabelledSnapshot& s = snapshots_[i];
    out << pad_right(labels[i], label_width)
        << pad_left(format_bytes(s.total.allocated_bytes), kNumberWidth)
        << pad_left(format_bytes(s.total.reserved_bytes), kNumberWidth)
        << pad_left(format_bytes(s.total.peak_allocated_bytes), kNumberWidth)
        << pad_left(seconds_between(snapshots_.front().time, s.time), kNumberWidth) << "\n";
  }
  return out.str();
}

}  // namespace npumem
