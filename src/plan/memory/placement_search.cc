#include "plan/memory/placement_search.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "plan/memory/exact_placement.h"
#include "plan/memory/filler_placement.h"
#include "plan/memory/mirror_compaction.h"
#include "plan/memory/order_placement.h"
#include "plan/memory/skyline_packing.h"
#include "plan/memory/skyline_priorities.h"
#include "plan/memory/uniform_random.h"

namespace npumem::plan {
namespace {

// The exact search runs on instances up to this many tensors, within this many nodes
// (tens of milliseconds).
constexpr std::size_t kExactMaxTensors = 16;
constexpr std::uint64_t kExactNodeBudget = 50'000;
// The greedy orders scan all placed tensors per tensor (quadratic time); above this size
// they take longer than the skyline runs they would displace, and lose to them.
constexpr std::size_t kGreedyMaxTensors = 4096;
// The randomised search only restarts for this many iterations, then also hill-climbs.
constexpr std::uint64_t kRestartOnlyIterations = 32;
// A squeaky-wheel climb boosts tensors that end above this share of the way from the
// lower bound to the incumbent's arena.
constexpr double kTopShare = 0.5;
// Mirror compaction (mirror_compaction.h). Up to kMaxCandidateCompactionTensors, where a
// pass takes a few skyline runs' time, the best of the fixed runs, once all have run (one
// often reaches the bound: on a 3,100-tensor training iteration, compacting the first
// run's plan before the others ran left 1.002-1.007 at the planned strategy's deadline),
// then every plan that beats the ones found before is compacted
// (kMaxCandidateCompactionPasses at most), and the search's best plan then gets
// kFinishingCompactionShare of the time and iterations for the rest of its passes and for
// kicks (plan_bench, 2000x400: seed 1 1.0071 -> 1.0057, seed 4 1.0078 -> 1.0010, before
// kicks; a larger share for kicks left seeds 1 and 9 higher). Larger instances, up to
// kFirstFitMaxTensors, compact only the search's best plan, which gets kCompactionShare
// of the time: a pass takes 50 ms on 10,000 tensors, and the first few passes there gain
// more than the search's second half (10000x400: 1.0311 -> 1.0192).
constexpr std::size_t kMaxCandidateCompactionTensors = 4096;
constexpr std::uint64_t kMaxCandidateCompactionPasses = 8;
constexpr double kFinishingCompactionShare = 0.1;
constexpr double kCompactionShare = 0.5;
constexpr std::uint64_t kMaxCompactionPasses = 64;
constexpr std::string_view kCompactedName = ", mirror compaction";  // appended to the method
// Kicks (mirror_compaction.h) of the final phase: the tensors whose tops lie within a random
// share of the bound, up to this one, below the top go last; then at most this many
// compaction passes. On the dense 2,000-tensor set of seed 1, 1.0057 -> 1.0029 (8 kicks);
// on 10,000 tensors a kick takes 200 ms (8 of them, without a deadline, took 1.0229 to
// 1.0214), so few run there.
constexpr double kMaxKickDepth = 0.005;
constexpr std::uint64_t kMaxKickCompactionPasses = 4;
// A kick's foreseen length in passes before one has run: the kicked pass and the two
// without gain that end the shortest compaction after it. Above 4,096 tensors, where the
// final compaction starts from a plan not compacted before and runs many passes, twice
// its time left no room for a kick (10000x400 seeds 2, 5: 1.0153 -> 1.0152, 1.0109 -> 1.0100).
constexpr int kKickPasses = 3;
constexpr std::string_view kKickedName = ", mirror compaction and kicks";

struct NamedOrder {
  const char* name;
  std::vector<std::uint32_t> (*order)(const PlanInstance&);
  GapRule rule;
};

constexpr NamedOrder kGreedyOrders[] = {
    {"greedy-by-size/best-fit", order_by_size, GapRule::best_fit},
    {"greedy-by-size/first-fit", order_by_size, GapRule::first_fit},
    {"greedy-by-conflicts/best-fit", order_by_conflicts, GapRule::best_fit},
};

// First fit of a whole instance takes time quadratic in the tensors; above this size it
// would take too much of the search's second.
constexpr std::size_t kFirstFitMaxTensors = 16'384;
// Greedy first fit in an order of priorities: largest first, with the tensors in the ops of
// most bytes live well ahead and longer ones a little. On the dense 10,000-tensor sets one
// of these often beats the whole skyline search (plan_bench).
struct NamedGreedyPriority {
  const char* name;
  PriorityWeights weights;
};
constexpr NamedGreedyPriority kPressureGreedyOrders[] = {
    {"greedy-by-pressure-and-size/first-fit", {0.25, 1.0, 10.0}},
    {"greedy-by-pressure-and-size-and-length/first-fit", {0.5, 1.0, 10.0}},
    {"greedy-by-high-pressure-and-size/first-fit", {0.25, 1.0, 20.0}},
};

struct NamedRun {
  const char* name;
  PriorityWeights weights;
  Lookahead lookahead;
};

constexpr PriorityWeights kLongestFirst{1.0, 0.01, 0.0};
constexpr PriorityWeights kLargestFirst{0.01, 1.0, 0.0};
constexpr PriorityWeights kLargestArea{1.0, 1.0, 0.0};
constexpr PriorityWeights kTightestFirst{1.0, 1.0, 4.0};
// Longest first, with the tensors in the ops of most bytes live moved well ahead.
constexpr PriorityWeights kLongestTightFirst{1.0, 0.1, 4.0};
constexpr PriorityWeights kLongestTightestFirst{1.0, 0.1, 8.0};

// Below kLargeInstanceTensors the first run is the one a short deadline may allow alone:
// one that reaches the bound on most real models.
constexpr NamedRun kSkylineRuns[] = {
    {"skyline/longest-first+lookahead", kLongestFirst, Lookahead::stranding},
    {"skyline/longest-first", kLongestFirst, Lookahead::none},
    {"skyline/largest-first", kLargestFirst, Lookahead::none},
    {"skyline/largest-first+lookahead", kLargestFirst, Lookahead::stranding},
    {"skyline/largest-area", kLargestArea, Lookahead::none},
    {"skyline/largest-area+lookahead", kLargestArea, Lookahead::stranding},
    {"skyline/tightest-first", kTightestFirst, Lookahead::none},
    {"skyline/tightest-first+lookahead", kTightestFirst, Lookahead::stranding},
};

// On instances this large only a few runs fit in a second, so these go first: the best
// single runs on the 100,000-tensor dense sets (longest first with tensors in the ops of
// most bytes live well ahead; the near-top lookahead ends lower over 400 ops, the plain
// one over 2,000). Smaller instances go without them: there the search decides, and
// starting it from them helped one dense 2,000-tensor set and hurt another.
constexpr std::size_t kLargeInstanceTensors = 20'000;
constexpr NamedRun kLargeInstanceRuns[] = {
    {"skyline/longest-tight-first+lookahead-near-top", kLongestTightFirst,
     Lookahead::stranding_near_top},
    {"skyline/longest-tight-first+lookahead", kLongestTightFirst, Lookahead::stranding},
    {"skyline/longest-tightest-first+lookahead-near-top", kLongestTightestFirst,
     Lookahead::stranding_near_top},
};

// On mid-size instances (those of the dense 10,000-tensor sets and their search without
// fillers), these go right after the first run: there the near-top lookahead's runs,
// their fillers placed after, often end below the whole search of the plain ones.
constexpr std::size_t kMidInstanceTensors = 4'000;
constexpr NamedRun kMidInstanceRuns[] = {
    {"skyline/longest-first+lookahead-near-top", kLongestFirst, Lookahead::stranding_near_top},
    {"skyline/longest-tight-first+lookahead-near-top", kLongestTightFirst,
     Lookahead::stranding_near_top},
    {"skyline/longest-tightest-first+lookahead-near-top", kLongestTightestFirst,
     Lookahead::stranding_near_top},
};

// On instances of kFillerMinTensors to kFirstFitMaxTensors, half the search time goes to
// the instance without its fillers (the smallest tensors, holding kFillerShare of the
// bytes), whose plan then takes them by first fit. Without them a skyline run takes about
// half as long and leaves fewer tensors high; on smaller sets the whole search gains more
// from the time (plan_bench: 10000x400 1.0388 -> 1.0331, but 2000x400 seeds 1, 3, 4 worse).
constexpr std::size_t kFillerMinTensors = 5'000;
constexpr double kFillerShare = 0.01;

// Skyline runs save their state when these shares of the tensors are left: a plan's top
// forms among the last tensors placed, so an end-game step resumes the best plan's run
// from one of them with the plain stranding lookahead and its priorities a little changed,
// in a fraction of a whole run's time. The shares get equal work (tensors placed again):
// on 100000x400 the near-top run ends at 1.0202, and the same priorities with the plain
// lookahead for the last 2 % at 1.0197 (10 ms against 400); on 20,000-tensor sets the
// deeper ones gain more over many steps. Only large instances run it (on smaller ones it
// changed only the search's luck): one step follows the first run (the cheapest: a loaded
// machine may leave no time after the fixed runs); after the fixed runs it gets half the
// time left, the whole-run search the rest, and it again what is left once whole runs no
// longer fit.
constexpr double kEndgameShares[] = {0.02, 0.1, 0.3};  // shallow to deep
constexpr double kEndgameNoise = 0.1;
constexpr Lookahead kEndgameLookahead = Lookahead::stranding;

class PlacementSearch {
 public:
  PlacementSearch(const PlanInstance& instance, std::span<const std::uint64_t> live,
                  const SearchLimits& limits, bool defer_fillers)
      : instance_(instance),
        defer_fillers_(defer_fillers),
        lower_bound_(live.empty() ? 0 : *std::max_element(live.begin(), live.end())),
        limits_(limits),
        random_(limits.seed),
        packer_(instance, live),
        features_(priority_features(instance, live)) {
    // Only large instances run an end game; the others' runs save nothing.
    if (instance.tensors.size() < kLargeInstanceTensors) return;
    for (const double share : kEndgameShares) {
      run_checkpoints_.emplace_back().unplaced =
          static_cast<std::size_t>(share * static_cast<double>(instance.tensors.size()));
      endgame_work_.push_back(0);
    }
    endgame_ = run_checkpoints_;
  }

  Placement run() {
    const std::span<const NamedRun> runs(kSkylineRuns);
    if (instance_.tensors.size() >= kLargeInstanceTensors) {
      const std::span<const NamedRun> large_runs(kLargeInstanceRuns);
      try_skyline_runs(large_runs.first(1));
      try_endgame(best_.search_iterations + 1);  // the first, cheapest step
      try_skyline_runs(large_runs.subspan(1));
      try_skyline_runs(runs);
      const SearchLimits half = half_of_rest();
      try_endgame(best_.search_iterations + half.max_iterations, half.deadline);
    } else {
      compacts_candidates_ = false;
      try_skyline_runs(runs.first(1));
      if (instance_.tensors.size() >= kMidInstanceTensors) try_skyline_runs(kMidInstanceRuns);
      try_skyline_runs(runs.subspan(1));
      compacts_candidates_ = true;
      compact_best();
    }
    const bool defers_fillers = defer_fillers_ && instance_.tensors.size() >= kFillerMinTensors &&
                                instance_.tensors.size() <= kFirstFitMaxTensors;
    if (defers_fillers && may_start()) try_search_without_fillers();
    if (instance_.tensors.size() <= kGreedyMaxTensors) try_greedy_orders();
    if (instance_.tensors.size() <= kFirstFitMaxTensors) try_pressure_greedy_orders();
    if (may_start() && instance_.tensors.size() <= kExactMaxTensors) try_exact();
    while (may_start() && best_.search_iterations < limits_.max_iterations) {
      timed([this] { search_step(); });
    }
    try_endgame(limits_.max_iterations, limits_.deadline);  // when whole runs no longer fit
    best_.proven_optimal = best_.proven_optimal || best_.arena <= lower_bound_;
    return std::move(best_);
  }

 private:
  using Clock = SearchClock;

  // Whether another step may start: not once the plan is proven optimal, nor when a step
  // of `length` (by default the longest so far) would end past the deadline.
  bool may_start(Clock::duration length) const {
    if (best_.proven_optimal || best_.arena <= lower_bound_) return false;
    return limits_.deadline - limits_.clock->now() > length;
  }
  bool may_start() const { return may_start(longest_step_); }

  template <class Step>
  void timed(Step step) {
    const Clock::time_point start = limits_.clock->now();
    step();
    longest_step_ = std::max(longest_step_, limits_.clock->now() - start);
  }

  // A skyline run of these priorities, saving its states for the end game; keeps the plan
  // (and its states) when it beats the best so far.
  std::uint64_t pack_and_consider(std::span<const double> priorities, std::uint64_t cutoff,
                                  Lookahead lookahead, const char* algorithm) {
    const std::uint64_t arena =
        packer_.pack(priorities, cutoff, offsets_, lookahead, run_checkpoints_);
    charge_packer_steps();
    if (arena < found_arena_ && !run_checkpoints_.empty()) {
      std::swap(endgame_, run_checkpoints_);
      endgame_priorities_.assign(priorities.begin(), priorities.end());
      endgame_keeps_priorities_.assign(endgame_.size(), lookahead != kEndgameLookahead);
    }
    consider(arena, algorithm);
    return arena;
  }

  void charge_packer_steps() {
    limits_.clock->skyline_steps(packer_.steps() - charged_steps_);
    charged_steps_ = packer_.steps();
  }

  // Half the time left and half the iterations left (as a count).
  SearchLimits half_of_rest() const {
    SearchLimits half = limits_;
    const Clock::time_point now = limits_.clock->now();
    if (limits_.deadline != Clock::time_point::max()) {
      half.deadline = now + (limits_.deadline - now) / 2;
    }
    half.max_iterations = (limits_.max_iterations - best_.search_iterations) / 2;
    return half;
  }

  // End-game steps until `iterations` of the search (at most its budget) have run, or the
  // next step would end past `until` (at most the deadline). Steps from the three depths
  // differ tenfold in time, so a step's time is foreseen from the most time per tensor
  // left that a step has taken so far.
  void try_endgame(std::uint64_t iterations, Clock::time_point until = Clock::time_point::max()) {
    iterations = std::min(iterations, limits_.max_iterations);
    until = std::min(until, limits_.deadline);
    while (!endgame_.empty() && endgame_.front().saved && best_.search_iterations < iterations) {
      const std::size_t depth = static_cast<std::size_t>(
          std::min_element(endgame_work_.begin(), endgame_work_.end()) - endgame_work_.begin());
      const auto unplaced = static_cast<Clock::rep>(endgame_[depth].unplaced);
      const Clock::duration foreseen = endgame_time_per_tensor_ * unplaced;
      if (!may_start(foreseen) || until - limits_.clock->now() <= foreseen) return;
      const Clock::time_point start = limits_.clock->now();
      endgame_step(depth);
      endgame_time_per_tensor_ =
          std::max(endgame_time_per_tensor_, (limits_.clock->now() - start) / unplaced);
    }
  }

  // Resumes the best plan's run from its saved state at `depth`, with the end game's
  // lookahead: first with the run's own priorities when the run had another lookahead, then
  // with them a little changed. When it wins, its priorities are the next step's and its
  // states (those with fewer tensors left) the end game's.
  void endgame_step(std::size_t depth) {
    ++best_.search_iterations;
    const SkylinePacker::Checkpoint& from = endgame_[depth];
    endgame_work_[depth] += from.unplaced;
    std::vector<double> priorities = endgame_priorities_;
    if (!endgame_keeps_priorities_[depth]) {
      add_priority_noise(priorities, kEndgameNoise, random_);
    }
    endgame_keeps_priorities_[depth] = false;
    const std::span<SkylinePacker::Checkpoint> shallower(run_checkpoints_.data(), depth);
    const std::uint64_t arena =
        packer_.resume(from, priorities, found_arena_, offsets_, kEndgameLookahead, shallower);
    charge_packer_steps();
    if (arena < found_arena_) {
      for (std::size_t i = 0; i < depth; ++i) {
        std::swap(endgame_[i], run_checkpoints_[i]);
        endgame_keeps_priorities_[i] = false;
      }
      endgame_priorities_ = std::move(priorities);
      consider(arena, "skyline+end-game search");
    }
  }

  // Keeps the plan in offsets_ when it beats the best so far, first compacted on instances
  // where that is cheap (see kMaxCandidateCompactionTensors).
  void consider(std::uint64_t arena, const char* algorithm) {
    if (arena >= found_arena_) return;
    found_arena_ = arena;
    compacted_ = offsets_;
    std::string named = algorithm;
    if (compacts_candidates_) {
      const std::uint64_t compacted = compact_candidate(arena);
      if (compacted < arena) named += kCompactedName;
      arena = compacted;
    }
    if (arena >= best_.arena) return;
    best_.arena = arena;
    best_.offsets.swap(compacted_);
    best_.algorithm = std::move(named);
  }

  // The fixed runs' best plan, compacted as a candidate is (see consider).
  void compact_best() {
    compacted_ = best_.offsets;
    const std::uint64_t compacted = compact_candidate(best_.arena);
    if (compacted >= best_.arena) return;
    best_.arena = compacted;
    best_.offsets.swap(compacted_);
    best_.algorithm += kCompactedName;
  }

  // Compacts the plan in compacted_ (of `arena`) where candidates are compacted (see
  // kMaxCandidateCompactionTensors); returns its arena after.
  std::uint64_t compact_candidate(std::uint64_t arena) {
    if (instance_.tensors.size() > kMaxCandidateCompactionTensors || arena <= lower_bound_) {
      return arena;
    }
    return compact_by_mirroring(instance_, compacted_, arena, kMaxCandidateCompactionPasses,
                                *limits_.clock, limits_.deadline);
  }

  void try_greedy_orders() {
    for (const NamedOrder& greedy : kGreedyOrders) {
      if (!may_start()) return;
      timed([&] {
        consider(place_in_order(instance_, greedy.order(instance_), greedy.rule, offsets_,
                                limits_.clock),
                 greedy.name);
      });
    }
  }

  void try_pressure_greedy_orders() {
    for (const NamedGreedyPriority& greedy : kPressureGreedyOrders) {
      if (!may_start()) return;
      timed([&] {
        const std::vector<double> priorities = weighted_priorities(features_, greedy.weights);
        consider(place_in_order(instance_, order_by_priority(priorities), GapRule::first_fit,
                                offsets_, limits_.clock),
                 greedy.name);
      });
    }
  }

  // The first skyline always runs, so a plan exists even past the deadline.
  void try_skyline_runs(std::span<const NamedRun> runs) {
    for (const NamedRun& named : runs) {
      if (incumbent_arena_ != kNoFit && !may_start()) return;
      timed([&] {
        std::vector<double> priorities = weighted_priorities(features_, named.weights);
        const std::uint64_t arena =
            pack_and_consider(priorities, found_arena_, named.lookahead, named.name);
        if (arena < incumbent_arena_) {
          new_incumbent(arena, std::move(priorities), named.lookahead);
        }
      });
    }
  }

  void try_exact() {
    ExactPlacement exact = place_exactly(instance_, lower_bound_, best_.arena, kExactNodeBudget);
    limits_.clock->exact_nodes(exact.nodes);
    if (exact.improved) {
      best_.arena = exact.arena;
      best_.offsets = std::move(exact.offsets);
      best_.algorithm = "exact";
    }
    best_.proven_optimal = exact.finished;
  }

  // A search of half the remaining time and iterations on the instance without its
  // fillers; then they go into its gaps.
  void try_search_without_fillers() {
    const FillerSplit split = split_fillers(instance_, kFillerShare);
    if (split.fillers.empty() || split.without_fillers.tensors.empty()) return;
    const SearchLimits half = half_of_rest();
    const std::vector<std::uint64_t> live = live_bytes_per_op(split.without_fillers);
    const Placement placed = PlacementSearch(split.without_fillers, live, half, false).run();
    best_.search_iterations += placed.search_iterations;
    if (placed.arena == kNoFit) return;
    timed([&] {
      consider(place_with_fillers(instance_, split, placed.offsets, offsets_, limits_.clock),
               "search without fillers, then first fit");
    });
  }

  void new_incumbent(std::uint64_t arena, std::vector<double> priorities, Lookahead lookahead) {
    incumbent_arena_ = arena;
    incumbent_priorities_ = std::move(priorities);
    incumbent_lookahead_ = lookahead;
    // The tensors a squeaky-wheel step boosts: those that end high in this plan.
    const std::uint64_t level =
        lower_bound_ +
        static_cast<std::uint64_t>(kTopShare * static_cast<double>(arena - lower_bound_));
    incumbent_top_.clear();
    for (std::uint32_t i = 0; i < instance_.tensors.size(); ++i) {
      if (offsets_[i] + instance_.tensors[i].size > level) incumbent_top_.push_back(i);
    }
  }

  // One skyline run: a restart from random priorities, with or without lookahead, or
  // (after the first restarts, half the time) a change to the incumbent's, kept when it is
  // no worse: random moves or a boost of the tensors that ended high.
  void search_step() {
    ++best_.search_iterations;
    const bool climb = best_.search_iterations > kRestartOnlyIterations &&
                       !incumbent_priorities_.empty() && random_() % 2 == 0;
    std::vector<double> priorities;
    Lookahead lookahead = incumbent_lookahead_;
    if (climb) {
      priorities = incumbent_priorities_;
      if (random_() % 2 == 0) {
        perturb_priorities(priorities, random_);
      } else {
        boost_priorities(priorities, incumbent_top_, random_);
      }
    } else {
      priorities = random_priorities(features_, random_);
      lookahead = random_() % 2 == 0 ? Lookahead::none : Lookahead::stranding;
    }
    // A climb keeps ties (to drift across plateaus), so it must finish runs that tie.
    const std::uint64_t cutoff = climb ? add_or_no_fit(incumbent_arena_, 1) : incumbent_arena_;
    const std::uint64_t arena = pack_and_consider(priorities, cutoff, lookahead, "skyline+search");
    if (arena < incumbent_arena_ || (climb && arena == incumbent_arena_)) {
      new_incumbent(arena, std::move(priorities), lookahead);
    }
  }

  const PlanInstance& instance_;
  const bool defer_fillers_;
  const std::uint64_t lower_bound_;
  const SearchLimits limits_;
  std::mt19937_64 random_;
  SkylinePacker packer_;
  std::uint64_t charged_steps_ = 0;  // the packer's steps charged to the clock so far
  const PriorityFeatures features_;
  std::vector<std::uint64_t> offsets_;  // scratch: the plan under evaluation
  // The least arena of the plans found (before compaction): the runs' cutoff.
  std::uint64_t found_arena_ = kNoFit;
  std::vector<std::uint64_t> compacted_;  // scratch: the plan found, compacted
  bool compacts_candidates_ = true;       // not during the fixed runs of small instances
  Placement best_;
  // The best skyline priorities so far, the hill climb's starting point.
  std::vector<double> incumbent_priorities_;
  Lookahead incumbent_lookahead_ = Lookahead::none;
  std::uint64_t incumbent_arena_ = kNoFit;
  std::vector<std::uint32_t> incumbent_top_;
  Clock::duration longest_step_{0};
  // The end game: the best plan's run as saved with each share of kEndgameShares left
  // (none below kLargeInstanceTensors), the work done from each, and the priorities that
  // finish it best so far.
  std::vector<SkylinePacker::Checkpoint> run_checkpoints_;  // scratch: the run's under way
  std::vector<SkylinePacker::Checkpoint> endgame_;
  std::vector<std::uint64_t> endgame_work_;
  std::vector<bool> endgame_keeps_priorities_;  // the next step from it is its first
  std::vector<double> endgame_priorities_;
  Clock::duration endgame_time_per_tensor_{0};
};

// The limits of the search before the final compaction: all but its share of the time and
// of the iterations.
SearchLimits search_share(const SearchLimits& limits, double compaction_share) {
  SearchLimits share = limits;
  const auto now = limits.clock->now();
  if (limits.deadline != SearchClock::time_point::max() && limits.deadline > now) {
    share.deadline = now + std::chrono::duration_cast<SearchClock::duration>(
                               (limits.deadline - now) * (1 - compaction_share));
  }
  if (limits.max_iterations != std::numeric_limits<std::uint64_t>::max()) {
    share.max_iterations = static_cast<std::uint64_t>(static_cast<double>(limits.max_iterations) *
                                                      (1 - compaction_share));
  }
  return share;
}

// The final phase: the search's best plan compacted, then kicks from it (kick_and_compact
// of the tensors within a random depth below the top), each kept when it ends no higher
// (ties too, to drift), until the deadline, the iterations or the bound. Each kick counts
// as a search iteration.
class FinalCompaction {
  using Clock = SearchClock;

 public:
  FinalCompaction(const PlanInstance& instance, Placement& placement, std::uint64_t lower_bound,
                  const SearchLimits& limits)
      : instance_(instance),
        placement_(placement),
        lower_bound_(lower_bound),
        limits_(limits),
        random_(limits.seed),
        arena_(placement.arena) {}

  void run() {
    const Clock::time_point compaction_start = limits_.clock->now();
    Clock::duration longest_pass{0};
    arena_ = compact_by_mirroring(instance_, placement_.offsets, arena_, kMaxCompactionPasses,
                                  *limits_.clock, limits_.deadline, &longest_pass);
    // A kick is a pass and a compaction: foreseen as twice this one, or as kKickPasses of its
    // longest pass when that is less (a long compaction), until one has run.
    longest_kick_ =
        std::min(2 * (limits_.clock->now() - compaction_start), kKickPasses * longest_pass);
    if (arena_ < placement_.arena) name(kCompactedName);
    const std::uint64_t compacted = arena_;
    while (arena_ > lower_bound_ && placement_.search_iterations < limits_.max_iterations) {
      const Clock::time_point start = limits_.clock->now();
      if (limits_.deadline - start <= longest_kick_) break;  // it would end past the deadline
      ++placement_.search_iterations;
      kick();
      longest_kick_ = std::max(longest_kick_, limits_.clock->now() - start);
    }
    if (arena_ < compacted) {
      if (placement_.algorithm.ends_with(kCompactedName)) {
        placement_.algorithm.resize(placement_.algorithm.size() - kCompactedName.size());
      }
      name(kKickedName);
    }
    placement_.arena = arena_;
    placement_.proven_optimal = placement_.proven_optimal || arena_ <= lower_bound_;
  }

 private:
  void kick() {
    const auto depth = static_cast<std::uint64_t>(kMaxKickDepth * uniform01(random_) *
                                                  static_cast<double>(lower_bound_));
    // Below the arena, so that the tensors at the top are always kicked.
    const std::uint64_t kicked_above = arena_ - 1 - std::min(depth, arena_ - 1);
    kicked_ = placement_.offsets;
    const std::uint64_t arena =
        kick_and_compact(instance_, kicked_, kicked_above, kMaxKickCompactionPasses, *limits_.clock,
                         limits_.deadline);
    if (arena > arena_) return;
    arena_ = arena;
    placement_.offsets.swap(kicked_);
  }

  void name(std::string_view method) {
    if (!placement_.algorithm.ends_with(method)) placement_.algorithm += method;
  }

  const PlanInstance& instance_;
  Placement& placement_;
  const std::uint64_t lower_bound_;
  const SearchLimits limits_;
  std::mt19937_64 random_;
  std::uint64_t arena_;
  std::vector<std::uint64_t> kicked_;  // scratch: the plan a kick makes
  Clock::duration longest_kick_{0};
};

}  // namespace

Placement search_placement(const PlanInstance& instance, std::span<const std::uint64_t> live,
                           const SearchLimits& limits) {
  if (instance.tensors.empty()) return Placement{0, {}, "none (no tensor has bytes)", true, 0};
  const bool compacts = instance.tensors.size() <= kFirstFitMaxTensors;
  const double compaction_share = instance.tensors.size() <= kMaxCandidateCompactionTensors
                                      ? kFinishingCompactionShare
                                      : kCompactionShare;
  Placement placement =
      PlacementSearch(instance, live, compacts ? search_share(limits, compaction_share) : limits,
                      true)
          .run();
  if (compacts && !placement.proven_optimal) {
    FinalCompaction(instance, placement, *std::max_element(live.begin(), live.end()), limits).run();
  }
  return placement;
}

}  // namespace npumem::plan
