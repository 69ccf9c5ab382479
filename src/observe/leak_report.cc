#include <cmath>
#include <cstdio>
#include <sstream>

#include "npumem/leak_detector.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::string percent(double fraction) {
  if (std::isinf(fraction)) return "+inf% (from nothing allocated)";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", fraction * 100.0);
  return text;
}

std::string describe(const LeakGroup& group, std::size_t iterations) {
  std::ostringstream out;
  out << "  tag '" << group.tag << "', pool '" << group.pool << "': " << group.count
      << (group.count == 1 ? " allocation, " : " allocations, ") << format_bytes(group.bytes)
      << " (requested " << format_bytes(group.requested_bytes) << "), made in " << group.iterations
      << " of " << iterations << " iterations (" << group.first_iteration << ".."
      << group.last_iteration << ")";
  if (group.recurring) out << "  <- left behind iteration after iteration";
  out << "\n";
  for (const std::string& frame : group.frames) out << "      at " << frame << "\n";
  return out.str();
}

}  // namespace

std::string to_string(const LeakReport& report) {
  std::ostringstream out;
  out << "leak check over " << report.iterations << " iterations\n"
      << "baseline allocated: " << format_bytes(report.baseline_bytes) << "\n"
      << "final allocated:    " << format_bytes(report.final_bytes) << "\n"
      << "growth:             " << percent(report.growth) << " (threshold "
      << percent(report.threshold) << ")\n";
  if (report.leaking) {
    out << "verdict: LEAK SUSPECTED: allocated memory grew above the threshold\n";
  } else {
    out << "verdict: no leak: allocated memory stayed within the threshold\n";
  }
  if (report.survivors.empty()) {
    out << "no allocation made since the baseline is still alive\n";
    return out.str();
  }
  out << "still alive, allocated since the baseline (most bytes first):\n";
  for (const LeakGroup& group : report.survivors) out << describe(group, report.iterations);
  return out.str();
}

}  // namespace npumem
