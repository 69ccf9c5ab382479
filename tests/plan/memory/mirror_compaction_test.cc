#include "plan/memory/mirror_compaction.h"

#include <gtest/gtest.h>

#include "plan/memory/order_placement.h"
#include "plan/memory/random_lifetimes.h"
#include "plan_checker.h"

namespace npumem::plan {
namespace {

using Clock = SearchClock;

// The machine's clock; the work clock where a test says so.
SearchClock machine_clock(false);

// A (ops 0-1), B (ops 1-2), C (op 0), D (op 2), 10 bytes each: 20 bytes live at every op.
const std::vector<TensorLifetime> kChain{{10, 0, 1}, {10, 1, 2}, {10, 0, 0}, {10, 2, 2}};

TEST(MirrorCompactionTest, TheTensorLeftHighSinksToTheBottom) {
  // A at 0, C above it, B above C: 30 bytes. Rebuilt from the top down (B, C, A, D by
  // first fit), B and C go to 0, A and D above them: 20 bytes, the bound.
  const PlanInstance instance = make_plan_instance(kChain, 1);
  std::vector<std::uint64_t> offsets{0, 20, 10, 0};
  EXPECT_EQ(
      compact_by_mirroring(instance, offsets, 30, 64, machine_clock, Clock::time_point::max()),
      20u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{10, 0, 0, 10}));
}

TEST(MirrorCompactionTest, NoPassesOrAPassedDeadlineLeaveThePlan) {
  const PlanInstance instance = make_plan_instance(kChain, 1);
  const std::vector<std::uint64_t> plan{0, 20, 10, 0};
  std::vector<std::uint64_t> offsets = plan;
  EXPECT_EQ(compact_by_mirroring(instance, offsets, 30, 0, machine_clock, Clock::time_point::max()),
            30u);
  EXPECT_EQ(offsets, plan);
  EXPECT_EQ(compact_by_mirroring(instance, offsets, 30, 64, machine_clock, machine_clock.now()),
            30u);
  EXPECT_EQ(offsets, plan);
}

// The clock of work done advances by the passes' work alone, so the passes a deadline
// allows are the same however long the machine takes: one pass foreseen past the
// deadline does not start.
TEST(MirrorCompactionTest, AWorkClockCountsThePassesWork) {
  const PlanInstance instance = make_plan_instance(kChain, 1);
  const std::vector<std::uint64_t> plan{0, 20, 10, 0};
  const auto worked = [&](std::uint64_t max_passes, Clock::duration limit) {
    SearchClock work(true);
    std::vector<std::uint64_t> offsets = plan;
    const Clock::time_point deadline =
        limit == Clock::duration::max() ? Clock::time_point::max() : work.now() + limit;
    compact_by_mirroring(instance, offsets, 30, max_passes, work, deadline);
    return work.now() - Clock::time_point();
  };
  const Clock::duration one_pass = worked(1, Clock::duration::max());
  const Clock::duration all_passes = worked(64, Clock::duration::max());
  EXPECT_GT(one_pass, Clock::duration::zero());
  EXPECT_GT(all_passes, one_pass);
  EXPECT_EQ(worked(64, Clock::duration::max()), all_passes);
  EXPECT_EQ(worked(64, one_pass + one_pass / 2), one_pass);
}

TEST(MirrorCompactionTest, ReportsItsLongestPass) {
  const PlanInstance instance = make_plan_instance(kChain, 1);
  std::vector<std::uint64_t> offsets{0, 20, 10, 0};
  Clock::duration longest_pass = Clock::duration::max();
  compact_by_mirroring(instance, offsets, 30, 0, machine_clock, Clock::time_point::max(),
                       &longest_pass);
  EXPECT_EQ(longest_pass, Clock::duration::zero());
  compact_by_mirroring(instance, offsets, 30, 64, machine_clock, Clock::time_point::max(),
                       &longest_pass);
  EXPECT_GT(longest_pass, Clock::duration::zero());
}

// A dense random set of 600 tensors over 120 ops and its greedy plan (by size, best fit).
struct GreedyPlan {
  explicit GreedyPlan(std::uint64_t seed)
      : tensors(random_lifetimes({.tensors = 600, .ops = 120, .seed = seed})),
        instance(make_plan_instance(tensors, 64)),
        arena(place_in_order(instance, order_by_size(instance), GapRule::best_fit, offsets)) {}
  std::vector<TensorLifetime> tensors;
  PlanInstance instance;
  std::vector<std::uint64_t> offsets;
  std::uint64_t arena;
};

TEST(MirrorCompactionTest, NeverRaisesTheArenaKeepsPlansValidAndLowersGreedyOnes) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const GreedyPlan plan(seed);
    const std::vector<TensorLifetime>& tensors = plan.tensors;
    const PlanInstance& instance = plan.instance;
    std::vector<std::uint64_t> offsets = plan.offsets;
    const std::uint64_t greedy = plan.arena;
    const std::uint64_t arena = compact_by_mirroring(instance, offsets, greedy, 64, machine_clock,
                                                     Clock::time_point::max());
    // Greedy by size sits several per cent above the bound on these sets; compaction takes
    // part of that back.
    EXPECT_LT(arena, greedy) << "seed " << seed;
    EXPECT_EQ(testing::instance_plan_problem(tensors, instance, offsets, arena, 64), "")
        << "seed " << seed;
  }
}

TEST(MirrorCompactionTest, AKickPlacesTheTensorsAtTheTopLastAndMayRaiseTheArena) {
  // B reaches above 29: the pass goes C, A, D, then B, which only fits above A.
  const PlanInstance instance = make_plan_instance(kChain, 1);
  std::vector<std::uint64_t> offsets{0, 20, 10, 0};
  EXPECT_EQ(kick_and_compact(instance, offsets, 29, 0, machine_clock, Clock::time_point::max()),
            30u);
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{10, 20, 0, 0}));
}

TEST(MirrorCompactionTest, KicksLowerSomeCompactedPlansAndKeepThemValid) {
  std::uint64_t lowered = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const GreedyPlan plan(seed);
    const std::vector<TensorLifetime>& tensors = plan.tensors;
    const PlanInstance& instance = plan.instance;
    std::vector<std::uint64_t> offsets = plan.offsets;
    const std::uint64_t greedy = plan.arena;
    const std::uint64_t compacted = compact_by_mirroring(instance, offsets, greedy, 64,
                                                         machine_clock, Clock::time_point::max());
    // Compaction has stopped gaining: only a kick can lower the plan now.
    std::uint64_t best = compacted;
    for (std::uint64_t depth = 0; depth < 8; ++depth) {
      std::vector<std::uint64_t> kicked = offsets;
      const std::uint64_t arena = kick_and_compact(instance, kicked, compacted - 1 - depth * 4096,
                                                   4, machine_clock, Clock::time_point::max());
      EXPECT_EQ(testing::instance_plan_problem(tensors, instance, kicked, arena, 64), "")
          << "seed " << seed << " depth " << depth;
      best = std::min(best, arena);
    }
    if (best < compacted) ++lowered;
  }
  EXPECT_GT(lowered, 0u);
}

}  // namespace
}  // namespace npumem::plan
