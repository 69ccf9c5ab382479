#include <algorithm>
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

// Iteration 0 is what came before the first mark ("(0..0)" read as nothing at all);
// two iterations are named both ("made in 2 of 5 iterations (0..4)" read as five).
std::string made_when(const LeakGroup& group) {
  const std::string first = std::to_string(group.first_iteration);
  const std::string last = std::to_string(group.last_iteration);
  if (group.first_iteration == group.last_iteration) {
    return group.first_iteration == 0 ? "iteration 0, before the first mark" : "iteration " + first;
  }
  return first + (group.iterations == 2 ? " and " : "..") + last;
}

std::string describe(const LeakGroup& group, std::size_t iterations) {
  std::ostringstream out;
  out << "  " << (group.tag.empty() ? std::string("untagged") : "tag '" + group.tag + "'")
      << ", pool '" << group.pool << "': " << group.count
      << (group.count == 1 ? " allocation, " : " allocations, ") << format_bytes(group.bytes)
      << " (requested " << format_bytes(group.requested_bytes) << "), made in " << group.iterations
      << " of " << iterations << " iterations (" << made_when(group) << ")";
  if (group.recurring) {
    // Of the group's bytes, those the judged iterations left, and per iteration: a group
    // holding the weights besides read as a 42.9 MiB leak of a few hundred bytes a step.
    out << "  <- left behind in " << group.judged_iterations
        << " iterations after warm-up: " << format_bytes(group.judged_bytes) << " of it, about "
        << format_bytes(group.judged_bytes / group.judged_iterations) << " per iteration";
  }
  out << "\n";
  for (const std::string& frame : group.frames) out << "      at " << frame << "\n";
  return out.str();
}

}  // namespace

std::string to_string(const LeakReport& report) {
  std::ostringstream out;
  out << "leak check over " << report.iterations << " iterations (warm-up "
      << report.warmup_iterations << ", judged " << report.judged_iterations << ")\n"
      << "allocated after warm-up: " << format_bytes(report.baseline_bytes)
      << " (where the steady state starts)\n"
      // At the last mark, not at the end: beside a snapshot taken at the end (`python3 -m
      // npumem.torch run` prints both), the two read as two final figures.
      << "final allocated:         " << format_bytes(report.final_bytes)
      << (report.iterations == 0 ? " (now: no iteration mark yet)"
                                 : " (at the last iteration mark)")
      << "\n";
  // Without two judged iterations there is no steady state to grow from (a run stopped
  // by an error printed "+inf% (from nothing allocated)" before "not judged").
  if (report.judged_iterations >= 2) {
    out << "growth:                  " << percent(report.growth) << "\n";
  }
  if (report.leaking) {
    // At least: each iteration counts up to its group's usual amount (leak_detector.cc),
    // so a leak that grows with each iteration reads below what it kept.
    out << "verdict: LEAK SUSPECTED: at least " << format_bytes(report.leaked_bytes)
        << " made after warm-up stays alive iteration after iteration (each judged iteration "
           "counted at its group's usual amount; the groups below show all they left; threshold "
        << percent(report.threshold) << " of the bytes allocated after warm-up)\n";
  } else if (report.judged_iterations < 2) {
    out << "verdict: not judged: the check needs two complete iterations after warm-up, "
           "this run had "
        << report.judged_iterations << "\n";
  } else if (report.leaked_bytes > 0) {
    out << "verdict: no leak above the threshold: at least " << format_bytes(report.leaked_bytes)
        << " made after warm-up stays alive iteration after iteration, within the threshold "
           "of "
        << percent(report.threshold) << " of the bytes allocated after warm-up\n";
  } else {
    out << "verdict: no leak: nothing made after warm-up stays alive iteration after iteration";
    // Survivors that judged iterations left, too few of them to recur: a slow leak.
    std::uint64_t left_bytes = 0;
    std::size_t left_by = 0;
    for (const LeakGroup& group : report.survivors) {
      if (group.recurring || group.judged_iterations == 0) continue;
      left_bytes += group.judged_bytes;
      left_by = std::max(left_by, group.judged_iterations);
    }
    if (left_bytes != 0) {
      out << "; " << format_bytes(left_bytes) << " left by " << left_by << " of the "
          << report.judged_iterations
          << " judged iterations survives (below): a leak slower than one iteration in two "
             "shows there";
    }
    out << "\n";
  }
  if (report.survivors.empty()) {
    out << "no allocation made since the detector started (or mark_baseline) is still alive\n";
    return out.str();
  }
  out << "alive at the end (or at the last iteration boundary), allocated since the detector "
         "started (or mark_baseline; recurring first, then most bytes):\n";
  // Once judged, groups no judged iteration left (weights, optimizer state, the last
  // iteration's outputs) go in one line: listed, a clean verdict came with 45 lines of
  // gradient buffers.
  const bool judged = report.judged_iterations >= 2;
  std::size_t setup_groups = 0;
  std::uint64_t setup_bytes = 0;
  for (const LeakGroup& group : report.survivors) {
    if (!judged || group.recurring || group.judged_iterations != 0) {
      out << describe(group, report.iterations);
    } else {
      ++setup_groups;
      setup_bytes += group.bytes;
    }
  }
  if (setup_groups != 0) {
    out << "  and " << setup_groups << (setup_groups == 1 ? " group" : " groups") << ", "
        << format_bytes(setup_bytes)
        << ", that no judged iteration left (made in warm-up, as weights and optimizer "
           "state are, or in the last iteration, which has not ended)\n";
  }
  return out.str();
}

}  // namespace npumem
