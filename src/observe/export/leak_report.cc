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
  // "(0..19)" read as all 20 iterations for a group made in 8 of them.
  return group.iterations == 2 ? first + " and " + last : "first " + first + ", last " + last;
}

std::string describe(const LeakGroup& group, std::size_t iterations) {
  std::ostringstream out;
  out << "  " << (group.tag.empty() ? std::string("untagged") : "tag '" + group.tag + "'")
      << ", pool '" << group.pool << "': " << group.count
      << (group.count == 1 ? " allocation, " : " allocations, ") << format_bytes(group.bytes)
      << " (requested " << format_bytes(group.requested_bytes) << "), ";
  if (iterations == 0) {
    out << "made before any iteration mark";  // not "made in 1 of 0 iterations"
  } else {
    // Of the marks' iterations and the one before the first mark: "made in 6 of 5" was
    // a group in all of them.
    out << "made in " << group.iterations << " of " << iterations + 1 << " iterations ("
        << made_when(group) << ")";
  }
  if (group.recurring) {
    // Of the group's bytes, those the judged iterations left, and per iteration: a group
    // holding the weights besides read as a 42.9 MiB leak of a few hundred bytes a step.
    out << "  <- left behind in " << group.judged_iterations
        << " iterations after warm-up: " << format_bytes(group.judged_bytes) << " of it, about "
        << format_bytes(group.judged_bytes / group.judged_iterations) << " per iteration";
  }
  out << "\n";
  if (!group.site.empty()) out << "      made at " << group.site << "\n";
  for (const std::string& frame : group.frames) out << "      at " << frame << "\n";
  return out.str();
}

}  // namespace

// Groups listed in full when the run was too short to judge, the largest first.
constexpr std::size_t kGroupsListedUnjudged = 10;

std::string to_string(const LeakReport& report) {
  std::ostringstream out;
  out << "leak check over " << report.iterations << " iteration marks (iterations 0 to "
      << report.iterations << ", 0 before the first mark, " << report.iterations
      << " in progress; warm-up " << report.warmup_iterations << ", judged "
      << report.judged_iterations << ")\n"
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
    // At least: the last judged iteration counts up to its group's usual amount
    // (leak_detector.cc), as what it made may be carried into the one in progress.
    out << "verdict: LEAK SUSPECTED: at least " << format_bytes(report.leaked_bytes)
        << " made after warm-up stays alive iteration after iteration (the last judged "
           "iteration counted at its group's usual amount; the groups below show all they "
           "left; threshold "
        << percent(report.threshold) << " of the bytes allocated after warm-up)\n";
  } else if (report.judged_iterations < 2) {
    out << "verdict: not judged: the check needs two complete iterations after warm-up, "
           "this run had "
        << report.judged_iterations;
    // An inference loop has no optimizer step to mark its iterations: it was judged
    // never, and said nothing of why.
    if (report.iterations == 0) {
      // "An optimizer step marks one" held under `run` and strategy:planned only: a
      // LeakDetector beside install() saw 8 Adam steps and no mark.
      out << " (no iteration was marked: optimizer steps mark them under `python3 -m "
             "npumem.torch run`, strategy:planned or after npumem.torch.mark_optimizer_steps(); "
             "a loop without one calls npumem.torch.iteration(), mark_iteration() in C++, "
             "npumem_iteration() in C)";
    }
    out << "\n";
  } else if (report.leaked_bytes > 0) {
    out << "verdict: no leak above the threshold: at least " << format_bytes(report.leaked_bytes)
        << " made after warm-up stays alive iteration after iteration, within the threshold "
           "of "
        << percent(report.threshold) << " of the bytes allocated after warm-up\n";
  } else {
    out << "verdict: no leak: nothing made after warm-up stays alive iteration after iteration";
    // Survivors that judged iterations left, too few or too bunched to recur; not the
    // last one's, which may be carried into the iteration in progress (every healthy
    // training run's last gradients read as a possible slow leak).
    if (report.unrecurring_bytes != 0) {
      out << "; " << format_bytes(report.unrecurring_bytes) << " left by "
          << report.unrecurring_iterations << " of the " << report.judged_iterations
          << " judged iterations survives (below): too few, or too bunched, to recur";
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
  // iteration's outputs), or only the last judged one (what it carries into the one in
  // progress, the last step's gradients), go in one line: listed, a clean verdict came
  // with 45 lines of gradient buffers.
  const bool judged = report.judged_iterations >= 2;
  const auto carried_only = [&](const LeakGroup& group) {
    return group.iterations == 1 && group.first_iteration + 1 == report.iterations;
  };
  std::size_t setup_groups = 0;
  std::uint64_t setup_bytes = 0;
  // Not judged, nothing tells setup from leak: the largest are listed and the rest
  // counted (a 3-step resnet18 run listed about 60 groups of gradients).
  std::size_t listed = 0;
  std::size_t more_groups = 0;
  std::uint64_t more_bytes = 0;
  for (const LeakGroup& group : report.survivors) {
    if (judged && !group.recurring && (group.judged_iterations == 0 || carried_only(group))) {
      ++setup_groups;
      setup_bytes += group.bytes;
    } else if (!judged && listed == kGroupsListedUnjudged) {
      ++more_groups;
      more_bytes += group.bytes;
    } else {
      out << describe(group, report.iterations);
      ++listed;
    }
  }
  if (more_groups != 0) {
    out << "  and " << more_groups << (more_groups == 1 ? " group" : " groups") << " more, "
        << format_bytes(more_bytes) << " (LeakReport::survivors lists every group)\n";
  }
  if (setup_groups != 0) {
    out << "  and " << setup_groups << (setup_groups == 1 ? " group" : " groups") << ", "
        << format_bytes(setup_bytes)
        << ", that no judged iteration left (made in warm-up, as weights and optimizer "
           "state are), or only the last judged one (carried into the iteration in "
           "progress, as the last step's gradients are)\n";
  }
  return out.str();
}

}  // namespace npumem
