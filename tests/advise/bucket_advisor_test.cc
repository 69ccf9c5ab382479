#include "bucket_advisor.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bucket_report.h"
#include "iteration_shapes.h"
#include "npumem/errors.h"

namespace npumem::cli {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// One iteration holding two requests of `bytes` at once.
std::string pair_iteration(std::uint64_t first_id, std::uint64_t bytes) {
  const std::string a = std::to_string(first_id);
  const std::string b = std::to_string(first_id + 1);
  const std::string size = std::to_string(bytes);
  return "i\na " + a + " " + size + "\na " + b + " " + size + "\nf " + a + "\nf " + b + "\n";
}

// Shapes of 10, 1 and 1.1 MiB (per request), in that order: the two small ones pad
// to one another for little, the large one only at a cost.
const std::uint64_t kSmall = kMiB;
const std::uint64_t kMedium = 2252 * 512;  // 1.1 MiB
const std::uint64_t kLarge = 10 * kMiB;
const std::string kThreeShapes = "a 100 4096\n" + pair_iteration(0, kLarge) +
                                 pair_iteration(2, kSmall) + pair_iteration(4, kMedium);

TEST(BucketAdvisor, TwoBucketsSeparateTheLargeShape) {
  const BucketAdvice advice = advise_buckets(parse_trace(kThreeShapes, "three"), {});
  EXPECT_EQ(advice.iterations, 3u);
  EXPECT_EQ(advice.shapes, 3u);
  EXPECT_EQ(advice.families, 1u);
  EXPECT_EQ(advice.outside_peak_bytes, 4096u);
  ASSERT_EQ(advice.choices.size(), 3u) << "up to 8 buckets, but no more than shapes";
  ASSERT_TRUE(advice.choices[1].has_value());
  const BucketChoice& two = *advice.choices[1];
  ASSERT_EQ(two.bucket_list.size(), 2u);
  EXPECT_EQ(two.bucket_list[0].iterations, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(two.bucket_list[0].lower_bound_bytes, 2 * kMedium);
  EXPECT_EQ(two.bucket_list[1].iterations, (std::vector<std::size_t>{0}));
  EXPECT_EQ(two.arena_bytes, 2 * kLarge);
  // The 1 MiB iteration padded to 1.1 MiB holds 2 x 0.1 MiB more, over 3 iterations.
  EXPECT_DOUBLE_EQ(two.waste_bytes, 2.0 * (kMedium - kSmall) / 3.0);
  const BucketChoice& one = *advice.choices[0];
  EXPECT_DOUBLE_EQ(one.waste_bytes, 2.0 * ((kLarge - kSmall) + (kLarge - kMedium)) / 3.0);
  EXPECT_EQ(advice.choices[2]->waste_bytes, 0.0);
  EXPECT_EQ(advice.recommended_buckets, 2u) << "within 1% of the 3 buckets' cost";
  EXPECT_EQ(advice.peak_requested_bytes, peak_live_bytes(parse_trace(kThreeShapes, "three")));
  EXPECT_GE(advice.caching_peak_reserved_bytes, advice.peak_requested_bytes);
  // Beside caching, expandable: what a trial found planned had to beat, unpadded.
  EXPECT_GE(advice.expandable_peak_reserved_bytes, advice.peak_requested_bytes);
  // The planned total in whole granules of the device (2 MiB): what it can reserve at least.
  EXPECT_EQ(advice.granule_bytes, 2 * kMiB);
  EXPECT_EQ(planned_granules_bytes(advice, two) % (2 * kMiB), 0u);
  EXPECT_GE(planned_granules_bytes(advice, two), planned_total_bytes(advice, two));
  EXPECT_LT(planned_granules_bytes(advice, two), planned_total_bytes(advice, two) + 2 * kMiB);
}

// The advice does not depend on the device: a device too small for the caching replay
// leaves out that comparison only (the whole command stopped, exit 2).
TEST(BucketAdvisor, ACachingReplayOutOfMemoryLeavesTheAdvice) {
  BucketAdviceOptions options;
  options.replay.device_spec = "sim:hbm=16MiB,ddr=0";
  const BucketAdvice advice = advise_buckets(parse_trace(kThreeShapes, "three"), options);
  EXPECT_EQ(advice.recommended_buckets, 2u);
  EXPECT_EQ(advice.caching_peak_reserved_bytes, 0u);
  EXPECT_NE(advice.caching_out_of_memory.find("ran out of memory on sim:0"), std::string::npos)
      << advice.caching_out_of_memory;
  EXPECT_EQ(advice.peak_requested_bytes, peak_live_bytes(parse_trace(kThreeShapes, "three")));
}

// A capture's first step comes before its first `i`: its activations are freed there,
// and only what they leave (the weights) lies beside the arena.
TEST(BucketAdvisor, TheFirstStepBeforeTheFirstIterationIsNotOutsideTheArena) {
  const std::string trace = "a 100 4096\na 101 " + std::to_string(8 * kMiB) + "\nf 101\n" +
                            pair_iteration(0, kSmall) + pair_iteration(2, kSmall);
  const BucketAdvice advice = advise_buckets(parse_trace(trace, "first_step"), {});
  EXPECT_EQ(advice.outside_peak_bytes, 4096u);
  EXPECT_EQ(advice.before_iterations_peak_bytes, 4096u + 8 * kMiB);
  const BucketChoice& one = *advice.choices[0];
  EXPECT_EQ(one.arena_bytes, 2 * kSmall);
  EXPECT_EQ(planned_total_bytes(advice, one), 4096u + 8 * kMiB) << "the first step's peak";
}

TEST(BucketAdvisor, NoToleranceRecommendsTheLeastCost) {
  BucketAdviceOptions options;
  options.tolerance = 0.0;
  EXPECT_EQ(advise_buckets(parse_trace(kThreeShapes, "three"), options).recommended_buckets, 3u);
}

// Neither shape is request by request above the other: their bucket plans the larger
// size of each request.
TEST(BucketAdvisor, ABucketPlansTheEnvelopeOfItsShapes) {
  const std::string trace =
      "i\na 0 3072\na 1 1024\nf 0\nf 1\n"
      "i\na 2 1024\na 3 3072\nf 2\nf 3\n";
  const BucketAdvice advice = advise_buckets(parse_trace(trace, "crossed"), {});
  ASSERT_EQ(advice.shapes, 2u);
  const BucketChoice& one = *advice.choices[0];
  EXPECT_EQ(one.bucket_list[0].lower_bound_bytes, 6144u);
  EXPECT_DOUBLE_EQ(one.waste_bytes, 2048.0);
  EXPECT_DOUBLE_EQ(one.padded_request_share, 4096.0 / 8192.0);
}

// Each iteration keeps its 10 MiB output until the next has made its own (a batch's
// output read after the next starts): two are live at once. The plan holds the one
// carried in; without it, the planned total was 11 MiB for 21 MiB live.
TEST(BucketAdvisor, AnOutputKeptIntoTheNextIterationIsPlannedBesideItsSuccessor) {
  std::string trace = "a 0 1048576\n";
  for (int k = 1; k <= 8; ++k) {
    trace += "i\na " + std::to_string(100 + k) + " 4194304\nf " + std::to_string(100 + k) + "\na " +
             std::to_string(k) + " 10485760\n";
    if (k > 1) trace += "f " + std::to_string(k - 1) + "\n";
  }
  const Trace parsed = parse_trace(trace, "keep_output");
  const BucketAdvice advice = advise_buckets(parsed, {});
  const BucketChoice& one = *advice.choices[0];
  EXPECT_EQ(advice.peak_requested_bytes, 21 * kMiB);
  EXPECT_EQ(one.arena_bytes, 20 * kMiB);
  EXPECT_EQ(planned_total_bytes(advice, one), 21 * kMiB);
  EXPECT_EQ(advice.shapes, 1u) << "the first iteration, carrying nothing in, is of the shape";
  EXPECT_TRUE(advice.set_aside.empty());
}

TEST(IterationShapes, CarriedTensorsMatchByTheOpBeforeTheirFree) {
  std::vector<plan::TensorLifetime> into = {{100, 0, 2}, {100, 0, 2}, {50, 0, 4}};
  merge_carried(into, {{300, 0, 1}, {200, 0, 2}, {60, 0, 4}, {70, 0, 4}});
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
      {300, 1}, {200, 2}, {100, 2}, {60, 4}, {70, 4}};
  ASSERT_EQ(into.size(), expected.size());
  for (std::size_t i = 0; i < into.size(); ++i) {
    EXPECT_EQ(into[i].bytes, expected[i].first) << i;
    EXPECT_EQ(into[i].last_op, expected[i].second) << i;
  }
}

// Before the first i and never freed (not in the last iteration): outside. Freed in
// the next iteration or, in the last, never: the iteration's own.
TEST(IterationShapes, WorkingSetsAndFamilies) {
  const std::string trace =
      "a 0 1000\n"
      "i\na 1 512\na 2 2048\nf 1\na 3 512\n"
      "i\nf 3\na 4 512\na 5 1024\nf 4\n";
  const IterationShapes shapes = iteration_shapes(parse_trace(trace, "t"));
  EXPECT_EQ(shapes.outside_peak_bytes, 3048u);
  EXPECT_EQ(shapes.before_iterations_peak_bytes, 1000u);
  ASSERT_EQ(shapes.families.size(), 2u) << "alloc, free, alloc vs alloc, alloc, free";
  EXPECT_EQ(shapes.families[0].shapes[0].sizes, (std::vector<std::uint64_t>{512, 512}));
  EXPECT_EQ(shapes.families[1].shapes[0].sizes, (std::vector<std::uint64_t>{512, 1024}));
  const auto& lifetimes = shapes.families[1].lifetimes;
  ASSERT_EQ(lifetimes.size(), 2u);
  EXPECT_EQ(lifetimes[0].last_op, 2u);
  EXPECT_EQ(lifetimes[1].last_op, 2u) << "never freed in the last iteration: to its end";
  EXPECT_TRUE(shapes.families[1].shapes[0].carried.empty())
      << "request 3, carried in, is freed before the iteration allocates";

  BucketAdviceOptions options;
  options.max_buckets = 1;
  try {
    advise_buckets(parse_trace(trace, "t.trace"), options);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("t.trace: 2 families"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("buckets pad sizes, not request counts"),
              std::string::npos)
        << e.what();
  }
}

// A keyed loop of two lengths whose first step also makes the optimizer state, and whose
// last frees in another order: alone in their orders, they took 2 of 4 buckets.
TEST(IterationShapes, TheFirstAndLastIterationsAloneInTheirOrdersAreSetAside) {
  std::string trace = "i 16\na 0 512\na 1 4096\nf 0\n";  // 1 lasts: optimizer state
  std::uint64_t id = 2;
  for (int step = 0; step < 6; ++step) {
    const std::string size = step % 2 == 0 ? "1024" : "2048";
    trace += "i " + std::string(step % 2 == 0 ? "16" : "32") + "\na " + std::to_string(id) + " " +
             size + "\na " + std::to_string(id + 1) + " " + size + "\nf " + std::to_string(id) +
             "\nf " + std::to_string(id + 1) + "\n";
    id += 2;
  }
  trace += "i 32\na 50 2048\na 51 2048\nf 51\nf 50\n";  // the end frees in reverse
  const IterationShapes shapes = iteration_shapes(parse_trace(trace, "t"));
  EXPECT_EQ(shapes.set_aside, (std::vector<std::size_t>{0, 7}));
  ASSERT_EQ(shapes.families.size(), 1u);
  EXPECT_EQ(shapes.families[0].shapes.size(), 2u) << "the loop's two lengths";
  const BucketAdvice advice = advise_buckets(parse_trace(trace, "t.trace"), {});
  EXPECT_EQ(advice.recommended_buckets, 2u);
  EXPECT_NE(bucket_advice_text(advice).find("iterations 0 (key 16) 7 (key 32)"), std::string::npos)
      << bucket_advice_text(advice);
}

// A capture marked at optimizer.step() ends with an iteration that only frees what the
// last step left: it has no shape, so it is no family of its own (which took the one
// bucket that all the steps' shapes fit) and no iteration the waste is shared over.
TEST(BucketAdvisor, AnIterationThatAllocatesNothingIsLeftOut) {
  const std::string trace = kThreeShapes + "i\nf 100\n";
  const IterationShapes shapes = iteration_shapes(parse_trace(trace, "t"));
  EXPECT_EQ(shapes.iterations, 4u);
  EXPECT_EQ(shapes.empty_iterations, 1u);
  ASSERT_EQ(shapes.families.size(), 1u);
  const BucketAdvice advice = advise_buckets(parse_trace(trace, "t"), {});
  const BucketAdvice without = advise_buckets(parse_trace(kThreeShapes, "three"), {});
  EXPECT_EQ(advice.empty_iterations, 1u);
  EXPECT_EQ(advice.families, 1u);
  ASSERT_TRUE(advice.choices[0].has_value()) << "one bucket takes every shape";
  EXPECT_DOUBLE_EQ(advice.choices[0]->waste_bytes, without.choices[0]->waste_bytes);
  EXPECT_EQ(advice.recommended_buckets, without.recommended_buckets);
}

// advise_buckets on `text`, read as the file `name`, refuses it with a message holding
// `expected`.
void expect_refused(const std::string& text, const std::string& name, const std::string& expected) {
  try {
    advise_buckets(parse_trace(text, name), {});
    FAIL() << "no error for " << name;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// A keyed trace's buckets say their iterations' keys (a batch size, a sequence-length
// bucket): numbers alone had to be mapped back to the trace's `i` lines.
TEST(BucketAdvisor, BucketsOfAKeyedTraceNameTheKeys) {
  std::string keyed = kThreeShapes;
  std::size_t at = 0;
  for (const char* key : {"i 16\n", "i 4\n", "i 5\n"}) {
    at = keyed.find("i\n", at);
    keyed.replace(at, 2, key);
    at += 2;
  }
  const BucketAdvice advice = advise_buckets(parse_trace(keyed, "keyed"), {});
  EXPECT_EQ(advice.iteration_keys, (std::map<std::size_t, std::uint64_t>{{0, 16}, {1, 4}, {2, 5}}));
  EXPECT_NE(bucket_advice_text(advice).find("iterations 1 (key 4) 2 (key 5)"), std::string::npos)
      << bucket_advice_text(advice);
  const auto json = bucket_advice_json(advice);
  EXPECT_EQ(json["choices"][1]["bucket_list"][0]["keys"], nlohmann::ordered_json::array({4, 5}));
  EXPECT_TRUE(advise_buckets(parse_trace(kThreeShapes, "three"), {}).iteration_keys.empty());
}

TEST(BucketAdvisor, BadInputIsNamed) {
  try {
    advise_buckets(parse_trace("a 0 10\nf 0\n", "flat.trace"), {});
    FAIL() << "no error for a trace without i lines";
  } catch (const ParseError& e) {
    // The input lacks what advice needs, as an empty trace lacks allocations: one class.
    EXPECT_NE(std::string(e.what()).find("flat.trace:2: no `i` lines"), std::string::npos)
        << e.what();
  }
  expect_refused("a 0 10\ni\nf 0\ni\n", "idle.trace", "idle.trace: no iteration allocates");
  // Iterations that allocate in named pools alone: it said they allocated nothing.
  expect_refused("p acts\ni\na 1 10\nf 1\ni\na 2 20\nf 2\ni\n", "pooled.trace",
                 "buckets are for the default pool, which the planned strategy plans; the "
                 "named pools acts are left out");
  BucketAdviceOptions none;
  none.max_buckets = 0;
  EXPECT_THROW(advise_buckets(parse_trace(kThreeShapes, "three"), none), ConfigError);
}

}  // namespace
}  // namespace npumem::cli
