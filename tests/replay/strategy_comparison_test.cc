#include "strategy_comparison.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "bisect.h"
#include "npumem/errors.h"
#include "npumem/units.h"
#include "static_advisor.h"
#include "tools/run_npumem.h"
#include "trace.h"

namespace npumem::cli {
namespace {

// Two iterations of three tensors; 12 MiB live at the peak.
Trace small_trace() {
  return parse_trace(
      "a 0 4194304\na 1 8388608\nf 0\na 2 1048576\nf 1\nf 2\n"
      "a 3 4194304\na 4 8388608\nf 3\na 5 1048576\nf 4\nf 5\n",
      "small.trace");
}

// Allocations in three pools: 4 MiB in default, 6 MiB in 'encoder', 3 MiB in 'decoder';
// frees come while another pool is current.
Trace pooled_trace() {
  return parse_trace(
      "a 0 4194304\np encoder\na 1 6291456\np decoder\na 2 3145728\nf 1\np default\nf 0\n"
      "i\nf 2\n",
      "pools.trace");
}

std::vector<std::uint32_t> slots(const Trace& trace) {
  std::vector<std::uint32_t> found;
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::alloc || event.op == TraceOp::free) found.push_back(event.index);
  }
  return found;
}

TEST(PoolPart, EachPoolKeepsItsAllocationsAndTheirFrees) {
  const Trace trace = pooled_trace();
  const Trace encoder = pool_part(trace, "encoder");
  EXPECT_EQ(slots(encoder), (std::vector<std::uint32_t>{1, 1}));
  EXPECT_EQ(peak_live_bytes(encoder), 6 * MiB);
  EXPECT_EQ(encoder.iterations, 1u);
  EXPECT_TRUE(encoder.pools.empty());
  EXPECT_EQ(slots(pool_part(trace, "decoder")), (std::vector<std::uint32_t>{2, 2}));
  EXPECT_EQ(slots(pool_part(trace, kDefaultPoolName)), (std::vector<std::uint32_t>{0, 0}));
  EXPECT_TRUE(slots(pool_part(trace, "absent")).empty());
}

// A quota in the trace that the device cannot honour is wrong for every strategy: the
// comparison stops with the trace's error at its line, not a failed row.
TEST(StrategyComparison, ATraceQuotaTheDeviceRefusesStopsItAtTheLine) {
  const Trace trace = parse_trace("a 0 10\np m 100\na 1 10\n", "q.trace");
  try {
    compare_strategies(trace, ReplayOptions{});
    FAIL() << "a quota of 100 B was compared";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("q.trace:2: pool 'm': a quota of 100 B"),
              std::string::npos)
        << e.what();
  }
}

TEST(StaticAdvisor, EveryPoolGetsTheArenaItsOwnAllocationsNeed) {
  const Trace trace = pooled_trace();
  const StaticAdvice advice = advise_static_size(trace, ReplayOptions{}, 0.5);
  EXPECT_GE(advice.min_arena_bytes, 4 * MiB);
  ASSERT_EQ(advice.pools.size(), 2u);
  for (const PoolArenaAdvice& pool : advice.pools) {
    const Trace part = pool_part(trace, pool.pool);
    EXPECT_EQ(pool.peak_requested_bytes, peak_live_bytes(part));
    EXPECT_GE(pool.min_arena_bytes, pool.peak_requested_bytes);
    EXPECT_GE(pool.recommended_bytes, pool.min_arena_bytes + pool.min_arena_bytes / 2);
    ReplayOptions alone;
    alone.config.strategy = Strategy::static_arena;
    alone.config.static_size = pool.min_arena_bytes - 2 * MiB;  // one device granule less
    EXPECT_FALSE(replay_trace(part, alone).completed()) << pool.pool;
  }
  ReplayOptions run;
  run.config.strategy = Strategy::static_arena;
  run.config.static_size = advice.min_arena_bytes;
  run.pool_quotas = pool_quotas(advice.pools, false);
  const ReplayResult result = replay_trace(trace, run);
  EXPECT_TRUE(result.completed()) << result.out_of_memory.value_or("");
  ASSERT_EQ(result.pools.size(), 3u);
  EXPECT_EQ(result.pools[1].quota_bytes, advice.pools[0].min_arena_bytes);
}

TEST(StrategyComparison, ATraceWithPoolsRunsUnderEveryStrategy) {
  const auto rows = compare_strategies(pooled_trace(), ReplayOptions{});
  ASSERT_EQ(rows.size(), 4u);  // caching, expandable, static, planned
  EXPECT_EQ(rows[2].pool_quotas.size(), 2u);
  EXPECT_EQ(comparison_json("pools.trace", rows)["strategies"][2]["pool_quotas"].size(), 2u);
}

// Quotas given (compare --quota) size their pools in every row, the static arena too;
// compare had no --quota, and its static row would have replaced them.
TEST(StrategyComparison, GivenQuotasHoldInEveryRow) {
  ReplayOptions options;
  options.pool_quotas = {{"encoder", 8 * MiB}};
  const auto rows = compare_strategies(pooled_trace(), options);
  EXPECT_EQ(rows[2].pool_quotas.at("encoder"), 8 * MiB);
  EXPECT_EQ(rows[2].pool_quotas.size(), 2u) << "decoder's arena as advised";
  // Each arena says where its size came from: the quota given read as "the smallest".
  const std::string text = comparison_text("pooled.trace", rows);
  EXPECT_NE(text.find("pool 'decoder' "), std::string::npos) << text;
  EXPECT_NE(text.find(" (the smallest), pool 'encoder' 8.00 MiB (its --quota); `npumem replay "
                      "--advise` adds a margin"),
            std::string::npos)
      << text;
  options.pool_quotas = {{"encoder", 2 * MiB}};  // less than its 6 MiB: no row completes
  for (const StrategyFigures& row : compare_strategies(pooled_trace(), options)) {
    EXPECT_FALSE(row.failure.empty()) << strategy_name(row.strategy);
  }
}

TEST(Bisect, FindsTheSmallestPassingValue) {
  for (std::uint64_t answer : {1u, 2u, 3u, 17u, 64u, 1000u}) {
    int probes = 0;
    const auto found = smallest_passing(0, 1, 4096, [&](std::uint64_t v) {
      ++probes;
      return v >= answer;
    });
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(*found, answer);
    EXPECT_LT(probes, 30);
  }
  EXPECT_FALSE(smallest_passing(0, 1, 100, [](std::uint64_t) { return false; }).has_value());
}

TEST(StaticAdvisor, TheArenaItRecommendsCompletesAndOneStepLessDoesNot) {
  const Trace trace = small_trace();
  ReplayOptions options;
  const StaticAdvice advice = advise_static_size(trace, options, 0.25);
  EXPECT_EQ(advice.peak_requested_bytes, 12 * MiB);
  EXPECT_GE(advice.min_arena_bytes, 12 * MiB);
  EXPECT_GE(advice.recommended_bytes, advice.min_arena_bytes + advice.min_arena_bytes / 4);
  ReplayOptions run;
  run.config.strategy = Strategy::static_arena;
  run.config.static_size = advice.min_arena_bytes;
  EXPECT_TRUE(replay_trace(trace, run).completed());
  run.config.static_size = advice.min_arena_bytes - 2 * MiB;  // one device granule less
  EXPECT_FALSE(replay_trace(trace, run).completed());
}

TEST(StrategyComparison, MeasuresEveryStrategy) {
  const auto rows = compare_strategies(small_trace(), ReplayOptions{});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].strategy, Strategy::caching);
  EXPECT_EQ(rows[1].strategy, Strategy::expandable);
  EXPECT_EQ(rows[2].strategy, Strategy::static_arena);
  EXPECT_EQ(rows[3].strategy, Strategy::planned);
  for (const StrategyFigures& row : rows) {
    EXPECT_EQ(row.peak_requested_bytes, 12 * MiB);
    EXPECT_GE(row.peak_reserved_bytes, row.peak_requested_bytes);
    EXPECT_GE(row.min_hbm_capacity_bytes, row.peak_requested_bytes);
    EXPECT_LE(row.min_hbm_capacity_bytes, row.peak_reserved_bytes);
    EXPECT_GE(row.overhead_ratio.value_or(0.0), 1.0);
    EXPECT_LE(row.latency.p50_ns, row.latency.p99_ns);
    EXPECT_LE(row.latency.p99_ns, row.latency.max_ns);
  }
  EXPECT_EQ(rows[2].device_allocs, 1);  // the arena, and nothing after it
  const auto json = comparison_json("small.trace", rows);
  EXPECT_EQ(json["strategies"].size(), 4u);
  EXPECT_EQ(json["strategies"][2]["strategy"], "static");
  EXPECT_EQ(json["strategies"][3]["strategy"], "planned");
}

// A static_size in the settings is the static row's arena (it was replaced by the
// smallest that completes, without a word).
TEST(StrategyComparison, TheStaticRowUsesAStaticSizeSet) {
  ReplayOptions options;
  options.config.static_size = 32 * MiB;
  const auto rows = compare_strategies(small_trace(), options);
  EXPECT_EQ(rows[2].static_size, 32 * MiB);
  EXPECT_TRUE(rows[2].static_size_given);
  EXPECT_NE(
      comparison_text("small.trace", rows).find("static arena: 32.0 MiB (static_size as set)\n"),
      std::string::npos)
      << comparison_text("small.trace", rows);
  EXPECT_FALSE(compare_strategies(small_trace(), ReplayOptions{})[2].static_size_given);
}

// 12 MiB live at the peak on 8 MiB of HBM: the dynamic strategies go on in DDR, the
// static arena (HBM only, no fallback) cannot hold it.
TEST(StrategyComparison, AStrategyThatCannotCompleteGetsARowSayingWhy) {
  ReplayOptions options;
  options.device_spec = "sim:hbm=8MiB,ddr=64MiB";
  const auto rows = compare_strategies(small_trace(), options);
  ASSERT_EQ(rows.size(), 4u);
  for (const StrategyFigures& row : rows) {
    if (row.strategy == Strategy::static_arena) {
      EXPECT_NE(row.failure.find("no static arena"), std::string::npos) << row.failure;
    } else {
      EXPECT_EQ(row.failure, "") << strategy_name(row.strategy);
      EXPECT_EQ(row.peak_requested_bytes, 12 * MiB);
    }
  }
  const auto json = comparison_json("small.trace", rows);
  EXPECT_EQ(json["strategies"][2]["completed"], false);
  EXPECT_EQ(json["strategies"][0]["completed"], true);
  const std::string text = comparison_text("small.trace", rows);
  EXPECT_NE(text.find("static      did not complete: no static arena"), std::string::npos) << text;
}

TEST(CompareCli, PrintsATableAndJson) {
  const std::string trace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << "no shared traces at " << trace;
  const auto text = testing::run_npumem("compare " + trace);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* word : {"caching", "expandable", "static", "planned", "min HBM", "p99"}) {
    EXPECT_NE(text.out.find(word), std::string::npos) << word << "\n" << text.out;
  }
  const auto json = testing::run_npumem("compare --json " + trace);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed["strategies"].size(), 4u);
  for (const auto& row : parsed["strategies"]) {
    EXPECT_EQ(row["peak_requested_bytes"], 380164640);
  }
}

TEST(ReplayAdviseCli, RecommendsAStaticSizeWithTheMargin) {
  const std::string trace = std::string(NPUMEM_SHARED_DIR) + "/traces/vit_b_16_infer.trace";
  if (!std::filesystem::exists(trace)) GTEST_SKIP() << "no shared traces at " << trace;
  const auto result = testing::run_npumem("replay --json --advise 20 " + trace);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto advice = nlohmann::json::parse(result.out)["static_advice"];
  const auto min_arena = advice["min_arena_bytes"].get<std::uint64_t>();
  EXPECT_GE(min_arena, 380164640u);
  EXPECT_GE(advice["recommended_static_size"].get<std::uint64_t>(), min_arena + min_arena / 5);
  EXPECT_EQ(testing::run_npumem("replay --advise -5 " + trace).exit_code, 2);
}

}  // namespace
}  // namespace npumem::cli
