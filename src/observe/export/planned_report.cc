#include "npumem/planned_report.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "npumem/units.h"

namespace npumem {
namespace {

// Unkeyed iterations whose shapes do not repeat (random sequence lengths): plans learned
// and never served, or not learned at all, said with the way out; empty otherwise.
std::string shapes_advice(const PlannedStats& stats) {
  if (stats.plans_relearned_after_eviction != 0) {
    // The shapes recur, only more of them than are kept: padding would not be the cure
    // (a trial of two alternating shapes with planned_max_plans:1 was told to pad).
    return "more shapes recur than the " + format_count(stats.max_plans, "plan") + " kept (" +
           format_count(stats.plans_relearned_after_eviction, "plan") +
           " learned again after eviction): raise planned_max_plans to the number of shapes "
           "that recur";
  }
  std::size_t unserved = 0;
  std::size_t unkeyed = 0;
  for (const PlanInfo& plan : stats.plans) {
    if (plan.key) continue;
    ++unkeyed;
    if (plan.iterations_served == 0 && !plan.declined) ++unserved;
  }
  if (unkeyed == 0 || (stats.iterations_not_learned == 0 && unserved < 2)) return {};
  return "the iterations' shapes seldom repeat (" + format_count(unserved) + " of the " +
         format_count(unkeyed) + " plans kept never served" +
         (stats.iterations_not_learned == 0
              ? std::string()
              : ", " + format_count(stats.iterations_not_learned, "iteration") + " not learned") +
         "): pad the size that varies to a few values (`npumem advise buckets TRACE` recommends "
         "them) and key each iteration by its value (`npumem.torch.iteration(key=...)`, `i "
         "<key>` lines), so that each gets a plan of its own";
}

std::string learned_line(const PlannedStats& p) {
  std::string text = format_count(p.plans_learned) + " (" + format_count(p.plans.size()) +
                     " kept), arena " + format_bytes(p.arena_bytes) + " now";
  // The arena is sized for the plan serving now; the largest kept plan's may be more.
  std::uint64_t largest = 0;
  for (const PlanInfo& plan : p.plans) {
    if (!plan.declined) largest = std::max(largest, plan.arena_bytes);
  }
  if (largest > p.arena_bytes) {
    text += " (the largest plan not declined: " + format_bytes(largest) + ")";
  }
  if (p.plans_evicted != 0) {
    // Shapes past the limit evict each other: each comes back to find its plan gone (the
    // advice then says to raise the limit). Not when shapes seldom repeat: more plans
    // would not serve (a trial raised it to 64 as told, beside the advice to pad, and
    // still had 0 hits).
    text += "; " + format_count(p.plans_evicted, "plan") + " evicted (at most " +
            format_count(p.max_plans) + " are kept, the least recently used goes" +
            (p.plans_relearned_after_eviction != 0
                 ? "; " + format_count(p.plans_relearned_after_eviction) +
                       " learned again after eviction)"
                 : ")");
  }
  // Learned again: the count passed the plans kept, with no eviction to say why (a
  // trial's one shape read "2 (1 kept)").
  const std::uint64_t accounted = p.plans.size() + p.plans_evicted;
  if (p.plans_learned > accounted) {
    const std::uint64_t replaced = p.plans_learned - accounted;
    text += "; " + format_count(replaced) +
            (replaced == 1 ? " replaced a plan" : " replaced plans") +
            " of its shape (learned again from a later iteration)";
  }
  if (p.iterations_not_learned != 0) {
    text += "; " + format_count(p.iterations_not_learned, "iteration") +
            " not learned (new shapes after learned ones went unserved)";
  }
  return text;
}

std::string requests_line(const PlannedStats& p) {
  char share[16];
  std::snprintf(share, sizeof share, "%.1f%%", 100 * p.hit_share());
  return format_count(p.hits) + " hits (" + format_bytes(p.hit_bytes) + "; " + share +
         " of the requests), " + format_count(p.fallbacks) + " fallbacks (" +
         format_bytes(p.fallback_bytes) + "), " + format_count(p.learning) + " while learning, " +
         (p.declined == 0 ? ""
                          : format_count(p.declined) + " in iterations of declined plans (" +
                                format_bytes(p.declined_bytes) + "), ") +
         format_count(p.lasting) + " kept out of the arena (they outlive the iteration), " +
         format_count(p.deferred) + " before a new arena (" + format_bytes(p.deferred_bytes) + ")";
}

std::string steady_line(const PlannedStats& p, std::string_view marks) {
  if (const std::string why = why_no_plan_served(p, marks); !why.empty()) {
    return "none: no plan served, it ran as its fallback (" + why + ")";
  }
  std::string ratio = "n/a (no byte requested)";
  if (const std::optional<double> steady = p.steady_overhead_ratio()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", *steady);
    ratio = text;
  }
  std::string floor;
  if (const std::optional<double> least = p.steady_floor_ratio()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", *least);
    floor = "; whole granules of " + format_bytes(p.granule_bytes) + " allow " + text + " at least";
  }
  // Where they came from: 250 calls "after the arena" read as the arena's failure.
  const std::string calls =
      p.device_calls_after_arena == 0
          ? std::string()
          : " (" + format_count(p.arena_device_calls) +
                " for arenas as plans changed: reserving, releasing, and the fallback's cache "
                "released for one; the rest the fallback's: misses, learning, iterations of "
                "declined plans)";
  return ratio + " (peak reserved / peak requested since a plan served, from iteration " +
         format_count(p.first_served_iteration) + floor + "); " +
         format_count(p.device_calls_after_arena, "device call") + " after the arena" + calls;
}

std::string plan_line(const PlanInfo& plan) {
  std::string text =
      format_count(plan.planned_requests) + " of " + format_count(plan.requests) + " requests";
  if (plan.hole_requests != 0) {
    text += " (" + format_count(plan.hole_requests) +
            " in the fallback's free space, beside what lasts)";
  }
  text += ", arena " + format_bytes(plan.arena_bytes) + ", lower bound " +
          format_bytes(plan.lower_bound_bytes) + ", served " +
          format_count(plan.iterations_served, "iteration");
  if (plan.iterations_left != 0) {
    text += "; " + format_count(plan.iterations_left, "iteration") + " began on it and left it";
    // Unkeyed iterations are matched to plans by their first requests. Left, they went
    // on otherwise: another shape that begins alike, or requests the learned iteration
    // lacked (optimizer state made in the first step).
    if (plan.iterations_served == 0 && !plan.key) {
      text +=
          " (they began as it does, then differed; if they are other shapes, iteration "
          "keys tell them apart)";
    }
  }
  if (plan.last_miss.seen && (plan.iterations_left != 0 || plan.declined_for_misses)) {
    // Which request sent iterations away: "left" alone said nothing of why.
    const PlanMiss& miss = plan.last_miss;
    if (miss.place_taken) {
      text += "; the last that missed it first missed at request " + format_count(miss.request) +
              ", of the plan's size (" + format_bytes(miss.bytes) +
              "), whose planned place a tensor still held (one not yet freed: of an iteration "
              "before it under another plan, or of the fallback)";
    } else {
      text += "; the last that missed it first differed at request " + format_count(miss.request) +
              ": " + format_bytes(miss.bytes) +
              (miss.planned_bytes == 0 ? ", past the plan's requests"
                                       : " where the plan has " + format_bytes(miss.planned_bytes));
    }
  }
  if (plan.declined_for_misses && plan.last_miss.place_taken) {
    text +=
        ", declined: each time it was learned again, the next iteration missed it where "
        "tensors of the iteration before still lay";
  } else if (plan.declined_for_misses) {
    text += std::string(", declined: each time it was learned again, the next iteration ") +
            (plan.key ? "under its key" : "of its shape") +
            " differed from it (other sizes or another order of requests)";
    if (plan.key) text += "; iterations under one key should repeat their requests";
  } else if (plan.declined) {
    text += ", declined: its arena beside what the fallback held would reserve at least " +
            format_bytes(plan.declined_reserved_bytes) + ", above the fallback's reserved peak " +
            "in the iteration it was learned from, " +
            format_bytes(plan.fallback_peak_reserved_bytes);
  }
  return text;
}

}  // namespace

std::string why_no_plan_served(const PlannedStats& stats, std::string_view marks) {
  if (stats.first_served_iteration != 0) return {};
  if (stats.iterations == 0) return "no iterations were marked with " + std::string(marks);
  const auto declined = [&](bool for_misses) {
    return std::any_of(stats.plans.begin(), stats.plans.end(), [&](const PlanInfo& plan) {
      return plan.declined && plan.declined_for_misses == for_misses;
    });
  };
  if (declined(false)) {
    return "its plans were declined: an arena beside what the fallback held would have "
           "reserved more than the fallback did";
  }
  if (declined(true)) {
    return "its plans were declined: the iterations they served kept differing from them";
  }
  if (stats.plans_learned == 0 && stats.learning == 0) {
    return "no request after the first iteration mark was in the default pool, the only one "
           "plans are learned for";
  }
  std::uint64_t followed = 0;
  for (const PlanInfo& plan : stats.plans) followed += plan.iterations_served;
  if (followed != 0 && stats.deferred != 0) {
    return std::string(stats.plans.size() == 1 ? "its plan" : "its plans") + " followed " +
           format_count(followed, "iteration") +
           ", but each request it placed came before the arena was reserved (" +
           format_count(stats.deferred) +
           " deferred: the iteration before still held the memory the arena waits for), so "
           "the fallback served them";
  }
  return "no iteration repeated the requests of a learned one";
}

std::vector<ReportLine> planned_report_lines(const PlannedStats& stats, std::string_view marks) {
  std::vector<ReportLine> lines = {{"plans learned", learned_line(stats)},
                                   {"planned requests", requests_line(stats)},
                                   {"steady overhead", steady_line(stats, marks)}};
  for (std::size_t i = 0; i < stats.plans.size(); ++i) {
    const PlanInfo& plan = stats.plans[i];
    std::string name = "plan " + std::to_string(i);
    if (plan.key) name += " (key " + std::to_string(*plan.key) + ")";
    lines.push_back({std::move(name), plan_line(plan)});
  }
  if (std::string advice = shapes_advice(stats); !advice.empty()) {
    lines.push_back({"advice", std::move(advice)});
  }
  return lines;
}

std::string planned_report(const PlannedStats& stats, std::string_view marks) {
  const std::vector<ReportLine> lines = planned_report_lines(stats, marks);
  std::size_t width = 0;
  for (const ReportLine& line : lines) width = std::max(width, line.name.size());
  std::string text;
  for (const ReportLine& line : lines) {
    text += "  " + line.name + std::string(width + 2 - line.name.size(), ' ') + line.value + "\n";
  }
  return text;
}

}  // namespace npumem
