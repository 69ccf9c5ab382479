#include "trace_lifetimes.h"

#include <gtest/gtest.h>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

// A weight, then two iterations of input -> output; the output of the first lives
// into the second, the output of the last to the end.
const char* const kTrace =
    "a 0 100\n"
    "i\n"
    "a 1 10\na 2 20\nf 1\n"
    "i\n"
    "f 2\na 3 10\na 4 20\nf 3\n";

TEST(TraceLifetimes, WholeTraceCountsOpsFromTheStart) {
  const TraceLifetimes lifetimes = trace_lifetimes(parse_trace(kTrace, "t"), std::nullopt);
  ASSERT_EQ(lifetimes.tensors.size(), 5u);
  EXPECT_EQ(lifetimes.ops, 8u);
  const std::uint64_t expected[5][3] = {
      {100, 0, 7}, {10, 1, 3}, {20, 2, 4}, {10, 5, 7}, {20, 6, 7}};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(lifetimes.tensors[i].bytes, expected[i][0]) << i;
    EXPECT_EQ(lifetimes.tensors[i].first_op, expected[i][1]) << i;
    EXPECT_EQ(lifetimes.tensors[i].last_op, expected[i][2]) << i;
  }
  EXPECT_EQ(lifetimes.live_after, 2u);
}

TEST(TraceLifetimes, OneIterationPlansOnlyItsOwnTensors) {
  const TraceLifetimes first = trace_lifetimes(parse_trace(kTrace, "t"), 0);
  ASSERT_EQ(first.tensors.size(), 2u);
  EXPECT_EQ(first.ops, 3u);
  EXPECT_EQ(first.live_before, 1u);  // the weight
  EXPECT_EQ(first.tensors[1].last_op, 2u) << "still live at its end: to the last op";
  const TraceLifetimes second = trace_lifetimes(parse_trace(kTrace, "t"), 1);
  ASSERT_EQ(second.tensors.size(), 2u);
  EXPECT_EQ(second.ops, 4u);
  EXPECT_EQ(second.tensors[0].first_op, 1u);
  EXPECT_EQ(second.tensors[0].last_op, 3u);
}

TEST(TraceLifetimes, AnIterationTheTraceLacksIsAnError) {
  try {
    trace_lifetimes(parse_trace(kTrace, "t.trace"), 2);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("t.trace: no iteration 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace npumem::cli
