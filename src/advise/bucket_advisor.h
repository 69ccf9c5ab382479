// `npumem advise buckets`: for a workload whose iterations vary in size (variable
// batch or sequence length), the k buckets (every iteration padded to the next one up)
// that cost the least planned arena plus padding waste, for k = 1 .. max_buckets
// (docs/PLANNING.md, "Buckets for dynamic shapes", describes the model).
//
// An iteration's shape is its working set (iteration_shapes.h). Padding an iteration
// to a bucket serves it from the plan of the bucket's envelope: the request-by-request
// largest size over the bucket's shapes, on their common lifetimes. One arena holds
// the largest bucket's plan. An iteration's padding waste is its bucket's lower bound
// (peak of live bytes) less its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "replay.h"
#include "trace.h"

namespace npumem::cli {

struct BucketAdviceOptions {
  std::size_t max_buckets = 8;  // the plans the planned strategy keeps at once
  // The recommendation: the fewest buckets whose cost is within this share of the least.
  double tolerance = 0.01;
  std::uint64_t alignment = Config{}.granule;  // the planned strategy's
  // Randomised search rounds per plan: a bound in rounds, not time, so that the advice
  // depends on the trace alone; the deadline only stops a plan that runs far too long.
  std::uint64_t plan_search_iterations = 64;
  std::chrono::nanoseconds plan_time_limit = std::chrono::seconds(2);
  ReplayOptions replay;  // for the caching strategy's figures (its strategy is ignored)
};

struct AdvisedBucket {
  std::uint64_t lower_bound_bytes = 0;  // of its envelope: what orders buckets
  std::uint64_t arena_bytes = 0;        // its envelope's plan
  std::vector<std::size_t> iterations;  // served by it, ascending
};

struct BucketChoice {
  std::size_t buckets = 0;
  std::uint64_t arena_bytes = 0;  // the largest bucket plan: the shared arena
  double waste_bytes = 0.0;       // padding waste, mean per iteration with a shape
  // Bytes the padded iterations request beyond their own, over what they request.
  double padded_request_share = 0.0;
  std::vector<AdvisedBucket> bucket_list;  // by family, then by size
  double cost_bytes() const { return static_cast<double>(arena_bytes) + waste_bytes; }
};

struct BucketAdvice;

// What the planned strategy would reserve with `choice`'s arena: the arena beside what
// lies outside the iterations, or the peak before the first iteration when higher.
std::uint64_t planned_total_bytes(const BucketAdvice& advice, const BucketChoice& choice);
// That, rounded up to whole granules of the device.
std::uint64_t planned_granules_bytes(const BucketAdvice& advice, const BucketChoice& choice);

struct BucketAdvice {
  std::string source;
  std::size_t iterations = 0;
  std::size_t empty_iterations = 0;  // of those, with nothing to pad (iteration_shapes.h)
  // Of those, the first or last, alone in an allocation order (iteration_shapes.h).
  std::vector<std::size_t> set_aside;
  std::size_t shapes = 0;
  std::size_t families = 0;
  std::size_t max_buckets = 0;
  double tolerance = 0.0;
  // Each request rounded up to it in the plans (`plan memory --alignment` plans alike).
  std::uint64_t alignment = 0;
  // The key of each keyed iteration (`i <key>`), by its number: what a bucket's
  // iterations were (a batch size, a sequence-length bucket), not only their numbers.
  std::map<std::size_t, std::uint64_t> iteration_keys;
  std::uint64_t outside_peak_bytes = 0;            // weights, optimizer state: beside the arena
  std::uint64_t before_iterations_peak_bytes = 0;  // before the first `i` (iteration_shapes.h)
  std::uint64_t peak_requested_bytes = 0;
  std::uint64_t caching_peak_reserved_bytes = 0;  // the trace as it is, unpadded
  // Set when the caching replay ran out of memory on its device: its message. The advice
  // does not depend on the device; only this comparison is missing (0 above).
  std::string caching_out_of_memory;
  std::uint64_t expandable_peak_reserved_bytes = 0;  // likewise, unpadded
  std::string expandable_out_of_memory;
  // The device maps memory in multiples of it: the planned total in whole granules is
  // the least the planned strategy can reserve.
  std::uint64_t granule_bytes = 0;
  // k = 1 .. the lesser of max_buckets and the number of shapes (more buckets than
  // shapes there are none); k below the number of families has none.
  std::vector<std::optional<BucketChoice>> choices;
  std::size_t recommended_buckets = 0;
};

// Throws ParseError when the trace has no `i` line; ConfigError when it has no iteration
// with a working set, or max_buckets is 0.
BucketAdvice advise_buckets(const Trace& trace, const BucketAdviceOptions& options);

}  // namespace npumem::cli
