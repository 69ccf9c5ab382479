#include "npumem/monitor.h"

#include <cstdio>
#include <sstream>

#include "npumem/units.h"
#include "observe/export/text_cell.h"
#include "observe/watch/usage.h"

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
  using observe::pad_left;
  using observe::pad_right;
  std::ostringstream out;
  out << "memory report (" << allocator_.device().name() << ")\n"
      << pad_right("label", kLabelWidth) << pad_left("allocated", kNumberWidth)
      << pad_left("reserved", kNumberWidth) << pad_left("peak", kNumberWidth)
      << pad_left("time (s)", kNumberWidth) << "\n"
      << std::string(kLabelWidth + 4 * kNumberWidth, '-') << "\n";
  for (const LabelledSnapshot& s : snapshots_) {
    out << pad_right(s.label, kLabelWidth)
        << pad_left(format_bytes(s.total.allocated_bytes), kNumberWidth)
        << pad_left(format_bytes(s.total.reserved_bytes), kNumberWidth)
        << pad_left(format_bytes(s.total.peak_allocated_bytes), kNumberWidth)
        << pad_left(seconds_between(snapshots_.front().time, s.time), kNumberWidth) << "\n";
  }
  return out.str();
}

}  // namespace npumem
