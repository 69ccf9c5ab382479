#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "formats/trace.h"
#include "formats/trace_lifetimes.h"
#include "npumem/arena_planner.h"

namespace npumem {
namespace {

// The planned strategy plans each new shape of iteration at its boundary, under the
// allocator's lock: its planner must reach the bound of real iterations within its
// deadline. On this dynamic-shape training trace (about 3,100 tensors an iteration),
// the fixed skyline orders reach it; a compaction of the first order's plan before the
// others ran left iterations at 1.002-1.007 after the whole deadline.
TEST(MemoryArenaPlanner, TheDefaultPlannerReachesTheBoundOfEachIterationOfATrainingTrace) {
  const std::filesystem::path file =
      std::string(NPUMEM_SHARED_DIR) + "/traces/bert_train_dynpad.trace";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no shared trace " << file;
  const cli::Trace trace = cli::read_trace(file);
  const auto planner = default_arena_planner();
  for (std::size_t iteration = 0; iteration + 1 < trace.iterations; ++iteration) {
    const cli::TraceLifetimes lifetimes = cli::trace_lifetimes(trace, iteration);
    const ArenaLayout layout = planner->lay_out(lifetimes.tensors, 2 << 20);
    EXPECT_EQ(layout.arena_bytes, layout.lower_bound_bytes) << "iteration " << iteration;
  }
}

}  // namespace
}  // namespace npumem
