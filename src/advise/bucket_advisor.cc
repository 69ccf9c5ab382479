#include "bucket_advisor.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "bucket_choice.h"
#include "iteration_shapes.h"
#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::cli {
namespace {

// What the report says of a run of a family's shapes, beside its cost.
struct RangeFigures {
  std::uint64_t lower_bound_bytes = 0;
  std::uint64_t padded_request_bytes = 0;  // over the iterations it serves
};

// A family's shapes, smallest lower bound first (ties: fewer requested bytes, earlier).
void sort_by_size(ShapeFamily& family, std::uint64_t alignment) {
  std::vector<std::uint64_t> bounds;
  for (const IterationShape& shape : family.shapes) {
    bounds.push_back(
        plan::memory_lower_bound(with_sizes(family, shape.sizes, shape.carried), alignment));
  }
  std::vector<std::size_t> order(family.shapes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const IterationShape& x = family.shapes[a];
    const IterationShape& y = family.shapes[b];
    if (bounds[a] != bounds[b]) return bounds[a] < bounds[b];
    if (x.requested_bytes != y.requested_bytes) return x.requested_bytes < y.requested_bytes;
    return x.iterations.front() < y.iterations.front();
  });
  std::vector<IterationShape> sorted;
  for (std::size_t i : order) sorted.push_back(std::move(family.shapes[i]));
  family.shapes = std::move(sorted);
}

// Plans every run first..last of the family's shapes on its envelope.
FamilyCosts range_costs(const ShapeFamily& family, const BucketAdviceOptions& options,
                        std::size_t iterations, std::vector<RangeFigures>& figures) {
  const std::size_t n = family.shapes.size();
  FamilyCosts costs(n);
  figures.assign(n * n, {});
  plan::MemoryPlanOptions plan_options;
  plan_options.alignment = options.alignment;
  plan_options.time_limit = options.plan_time_limit;
  plan_options.max_search_iterations = options.plan_search_iterations;
  std::vector<std::uint64_t> own_bound(n);
  for (std::size_t i = 0; i < n; ++i) {
    const IterationShape& shape = family.shapes[i];
    own_bound[i] =
        plan::memory_lower_bound(with_sizes(family, shape.sizes, shape.carried), options.alignment);
  }
  for (std::size_t first = 0; first < n; ++first) {
    std::vector<std::uint64_t> envelope = family.shapes[first].sizes;
    std::vector<plan::TensorLifetime> carried_envelope = family.shapes[first].carried;
    for (std::size_t last = first; last < n; ++last) {
      const IterationShape& added = family.shapes[last];
      for (std::size_t r = 0; r < envelope.size(); ++r) {
        envelope[r] = std::max(envelope[r], added.sizes[r]);
      }
      merge_carried(carried_envelope, added.carried);
      const plan::MemoryPlan plan =
          plan::plan_memory(with_sizes(family, envelope, carried_envelope), plan_options);
      const std::uint64_t envelope_bytes =
          std::accumulate(envelope.begin(), envelope.end(), std::uint64_t{0});
      double waste = 0.0;
      RangeFigures& range = figures[first * n + last];
      range.lower_bound_bytes = plan.lower_bound_bytes;
      for (std::size_t m = first; m <= last; ++m) {
        const IterationShape& member = family.shapes[m];
        const auto count = static_cast<std::uint64_t>(member.iterations.size());
        waste += static_cast<double>(count * (plan.lower_bound_bytes - own_bound[m]));
        range.padded_request_bytes += count * (envelope_bytes - member.requested_bytes);
      }
      costs.at(first, last) = {plan.arena_bytes, waste / static_cast<double>(iterations)};
    }
  }
  return costs;
}

}  // namespace

std::uint64_t planned_total_bytes(const BucketAdvice& advice, const BucketChoice& choice) {
  return std::max(advice.before_iterations_peak_bytes,
                  choice.arena_bytes + advice.outside_peak_bytes);
}

std::uint64_t planned_granules_bytes(const BucketAdvice& advice, const BucketChoice& choice) {
  const std::uint64_t total = planned_total_bytes(advice, choice);
  const std::uint64_t granule = std::max<std::uint64_t>(advice.granule_bytes, 1);
  return (total + granule - 1) / granule * granule;
}

BucketAdvice advise_buckets(const Trace& trace, const BucketAdviceOptions& options) {
  if (options.max_buckets == 0) throw ConfigError("the most buckets must be at least 1");
  if (!(options.tolerance >= 0.0) || !std::isfinite(options.tolerance)) {
    throw ConfigError("the tolerance must be a finite number >= 0");
  }
  IterationShapes shapes = iteration_shapes(trace);
  if (shapes.families.empty()) {
    // Buckets are the planned strategy's, which plans the default pool alone: a trace
    // whose iterations allocate in named pools read as one whose iterations free nothing.
    std::string named;
    for (const std::string& pool : trace.pools) {
      if (pool != kDefaultPoolName) named += (named.empty() ? "" : ", ") + pool;
    }
    throw ConfigError(trace.source +
                      ": no iteration allocates a tensor in the default pool that is freed "
                      "before the next one ends: nothing to put in buckets" +
                      (named.empty() ? ""
                                     : " (buckets are for the default pool, which the planned "
                                       "strategy plans; the named pools " +
                                           named + " are left out)"));
  }
  if (options.max_buckets < shapes.families.size()) {
    // "None can be padded to another" read as wrong for an RNN, whose longer sequences
    // make more requests: padding them is what its user wants, but this model cannot.
    throw ConfigError(
        trace.source + ": " + std::to_string(shapes.families.size()) +
        " families of iterations whose requests differ in number or order need at least " +
        std::to_string(shapes.families.size()) + " buckets, more than the most (" +
        std::to_string(options.max_buckets) +
        "); buckets pad sizes, not request counts, so a model whose requests grow with the "
        "length (an RNN unrolled over a sequence) is outside what this advice models");
  }
  BucketAdvice advice;
  advice.source = trace.source;
  advice.iterations = shapes.iterations;
  advice.empty_iterations = shapes.empty_iterations;
  advice.set_aside = shapes.set_aside;
  advice.families = shapes.families.size();
  advice.max_buckets = options.max_buckets;
  advice.tolerance = options.tolerance;
  advice.alignment = options.alignment;
  std::size_t marks = 0;  // iteration k begins at the k+1-th `i` line
  for (const TraceEvent& event : trace.events) {
    if (event.op != TraceOp::iteration) continue;
    if (event.index == 1) advice.iteration_keys[marks] = event.bytes;
    ++marks;
  }
  advice.outside_peak_bytes = shapes.outside_peak_bytes;
  advice.before_iterations_peak_bytes = shapes.before_iterations_peak_bytes;

  std::vector<FamilyCosts> costs;
  std::vector<std::vector<RangeFigures>> figures(shapes.families.size());
  std::uint64_t requested_bytes = 0;  // over every iteration, unpadded
  for (std::size_t f = 0; f < shapes.families.size(); ++f) {
    ShapeFamily& family = shapes.families[f];
    sort_by_size(family, options.alignment);
    advice.shapes += family.shapes.size();
    for (const IterationShape& shape : family.shapes) {
      requested_bytes += shape.requested_bytes * shape.iterations.size();
    }
    costs.push_back(range_costs(
        family, options, shapes.iterations - shapes.empty_iterations - shapes.set_aside.size(),
        figures[f]));
  }

  for (std::optional<Bucketing>& best :
       best_bucketings(costs, std::min(options.max_buckets, advice.shapes))) {
    if (!best) {
      advice.choices.emplace_back();
      continue;
    }
    BucketChoice choice;
    choice.buckets = best->buckets.size();
    choice.arena_bytes = best->arena_bytes;
    choice.waste_bytes = best->waste;
    std::uint64_t padded = 0;
    for (const BucketRange& r : best->buckets) {
      const ShapeFamily& family = shapes.families[r.family];
      const RangeFigures& range = figures[r.family][r.first * family.shapes.size() + r.last];
      AdvisedBucket bucket;
      bucket.lower_bound_bytes = range.lower_bound_bytes;
      bucket.arena_bytes = costs[r.family].at(r.first, r.last).arena_bytes;
      for (std::size_t m = r.first; m <= r.last; ++m) {
        const auto& its = family.shapes[m].iterations;
        bucket.iterations.insert(bucket.iterations.end(), its.begin(), its.end());
      }
      std::sort(bucket.iterations.begin(), bucket.iterations.end());
      padded += range.padded_request_bytes;
      choice.bucket_list.push_back(std::move(bucket));
    }
    choice.padded_request_share =
        requested_bytes == 0 ? 0.0
                             : static_cast<double>(padded) / static_cast<double>(requested_bytes);
    advice.choices.emplace_back(std::move(choice));
  }
  std::optional<double> least;
  for (const auto& choice : advice.choices) {
    if (choice && (!least || choice->cost_bytes() < *least)) least = choice->cost_bytes();
  }
  for (const auto& choice : advice.choices) {
    if (choice && choice->cost_bytes() <= *least * (1.0 + options.tolerance)) {
      advice.recommended_buckets = choice->buckets;
      break;
    }
  }

  advice.peak_requested_bytes = peak_live_bytes(trace);
  // The online strategies on the trace as it is, unpadded: what the buckets must beat.
  const auto replay_under = [&](Strategy strategy, std::uint64_t& peak, std::string& failure) {
    ReplayOptions replay = options.replay;
    replay.config.strategy = strategy;
    const ReplayResult result = replay_trace(trace, replay);
    advice.granule_bytes = result.hbm_granularity_bytes;
    if (result.completed()) {
      peak = result.peak_reserved_bytes();
    } else {
      failure = "ran out of memory on " + result.device_name +
                " (a larger --device may hold it): " + *result.out_of_memory;
    }
  };
  replay_under(Strategy::caching, advice.caching_peak_reserved_bytes, advice.caching_out_of_memory);
  replay_under(Strategy::expandable, advice.expandable_peak_reserved_bytes,
               advice.expandable_out_of_memory);
  return advice;
}

}  // namespace npumem::cli
