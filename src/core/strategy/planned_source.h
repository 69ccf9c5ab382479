// The planned strategy: learns an iteration's requests and lifetimes, lays them out
// with an ArenaPlanner, and serves the k-th request of a later iteration at its planned
// offset in one arena when its size matches. An iteration's plan is the one whose first
// requests match its own so far, or, when the caller keys its iterations, the plan
// learned under its key. Everything else (requests before the first iteration mark,
// named pools, tensors that outlive their iteration, mismatches, iterations no plan
// serves) goes to a fallback: the expandable strategy's packed granules where the
// device maps memory (planned_fallback), so learning costs no more than expandable
// does; else the caching strategy's segments, which may use the arena's free space.
// Before the arena is reserved the fallback gives back its free memory, so the peak is
// the larger of the learning iteration and the arena beside what lasts, not their sum;
// a plan whose arena would pass the fallback's own peak for that iteration is declined.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "core/strategy/caching_source.h"
#include "core/strategy/expandable_source.h"
#include "npumem/arena_planner.h"

namespace npumem::core {

class PlannedSource : public SegmentSource {
 public:
  PlannedSource(Allocator::Impl& allocator, std::shared_ptr<const ArenaPlanner> planner);
  GrowResult grow(PoolState& pool, BlockPool& blocks, std::size_t size) override;
  std::size_t release(PoolState& pool, BlockPool& blocks) override;
  void release_all(PoolState& pool, BlockPool& blocks) override;
  // Named pools only (the default pool is never removed): the fallback's.
  std::size_t release_removed(PoolState& pool, BlockPool& blocks) override;
  PoolKind kind_for(std::size_t size) const override;
  // The expandable fallback's; 0 under caching's.
  std::size_t mapping_granule(Tier tier, std::size_t size) const override;
  // "expandable" or "caching": what serves what no plan does.
  const char* fallback_name() const { return expandable_ ? "expandable" : "caching"; }
  void pool_created(PoolState& pool) override;

  // The allocator's flow calls these with its lock held.
  // A request of `size` rounded bytes: its block at the planned offset, or nullptr
  // for the usual flow.
  Block* take(PoolState& pool, std::size_t size);
  // The block that served the request take() saw last.
  void allocated(Block& block);
  // `block` is being freed (it may yet be kept by a front cache).
  void freed(const Block& block);
  // `block`, freed and not kept, goes back; true when this released it (the caller must not).
  bool release_block(PoolState& pool, Block* block);
  // One iteration ends, the next starts: learns, re-learns, sizes the arena. With a key,
  // the next iteration is served by the plan learned under that key (and learns it
  // when there is none); without, by the plan its first requests match.
  void iteration_boundary(std::optional<std::uint64_t> key);
  PlannedStats stats() const;
  // reset_peak_stats(): the steady peaks become the current values (once a plan served).
  void reset_steady_peaks();
  // reset_accumulated_stats(): the counts of requests, plans and device calls start again
  // from 0.
  void reset_accumulated();

 private:
  static constexpr std::uint32_t kOpen = ~std::uint32_t{0};
  static constexpr std::uint64_t kNoSlot = ~std::uint64_t{0};
  using Extents = std::vector<std::pair<std::uintptr_t, std::uintptr_t>>;

  struct Request {
    std::size_t size = 0;
    std::uint32_t alloc_time = 0;
    std::uint32_t free_time = kOpen;
  };
  // A free, during this iteration, of a request of the previous one.
  struct CarriedFree {
    std::uint32_t index = 0;
    std::uint32_t time = 0;
  };
  // A free, during the first iteration recorded, of a block made before the recording
  // began: its size, as a request's, and the clock then.
  struct EarlierFree {
    std::size_t size = 0;
    std::uint32_t time = 0;
  };
  struct Recording {
    std::uint64_t iteration = 0;       // 0: before the first mark, nothing is recorded
    std::optional<std::uint64_t> key;  // the caller's, for the iteration
    std::vector<Request> requests;
    std::vector<CarriedFree> carried;
    std::vector<EarlierFree> earlier_frees;  // only with no iteration before on record
    std::uint32_t clock = 0;                 // recorded events so far: the time of lifetimes
  };
  struct Plan {
    std::optional<std::uint64_t> key;    // of the learned iteration: keyed plans serve by it
    std::vector<std::size_t> sizes;      // every request of the learned iteration
    std::vector<std::uint64_t> offsets;  // kNoSlot: not in the arena
    std::vector<bool> freed_next;        // freed in the next iteration: a new arena waits
    // Nonzero: placed at this address, in a hole of a fallback segment, not the arena.
    std::vector<std::uintptr_t> hole_address;
    // The address ranges its requests in holes take, merged and in order.
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> hole_ranges;
    // Where the free block that held each request began when it last hit: where
    // BlockPool::take_at looks first next time.
    std::vector<std::uintptr_t> held_from;
    // Where it began the time before, when that differed (a hole request whose block
    // alternated between two starts walked 545 blocks in every iteration).
    std::vector<std::uintptr_t> held_before;
    // Before a first hit: where that block begins, in an arena that starts empty (an
    // offset) or in its hole (an address), when the learned iteration's requests come
    // again in order; kNoSlot: not known.
    std::vector<std::uint64_t> first_from;
    // Requests kept out of the arena: where the fallback placed them the last two times
    // (0: not yet), where the next looks first.
    std::vector<std::uintptr_t> kept_at;
    std::vector<std::uintptr_t> kept_before;
    std::uint64_t arena_bytes = 0;
    std::uint64_t lower_bound_bytes = 0;
    std::uint64_t planned_requests = 0;
    std::uint64_t iterations_served = 0;
    std::uint64_t iterations_left = 0;  // began on it, then left it (count_left)
    // Of iterations_served, those abandoned for their misses: reported as left, not served.
    std::uint64_t iterations_abandoned = 0;
    // Of the plans it replaced, learned again for its shape (keep_plan): reported with
    // its own, so that the plans' counts add up to the iterations plans served.
    std::uint64_t served_before = 0;
    std::uint64_t left_before = 0;
    // The plan it re-learned had served: the arena stays sized for it while other shapes
    // serve in turn (a re-learned plan counted as new gave the arena back and reserved
    // it again at each change of shape, 4 device calls in 3 served iterations).
    bool shape_served = false;
    std::uint32_t fallback_streak = 0;  // consecutive served iterations with fallbacks
    // Its last served iteration missed beyond a few strays, or left it.
    bool missed = false;
    // Times in a row its shape was learned again after the plan serving it missed, each
    // new plan missing in turn (tensors of another shape's iterations, carried into its
    // own, take its places): past kMissedRelearns it is declined.
    std::uint32_t missed_relearns = 0;
    std::uint64_t last_used = 0;  // iteration, for eviction
    // Learned with the iteration before on record: what it kept out of the arena had
    // the chance to show that it goes in the next iteration.
    bool saw_previous = false;
    std::uint64_t fallback_peak_reserved = 0;  // of the learned iteration; 0: unknown
    // Requests kept out of the arena and made while their predecessor at the index
    // lives (an output kept until the next exists): the fallback holds both copies
    // beside the arena, so the test of the arena counts these bytes again.
    std::uint64_t kept_copy_bytes = 0;
    bool declined = false;  // its arena does not pay (reserve_arena), or it keeps missing
    bool declined_for_misses = false;
    // The reserved bytes the last pay test found its arena would bring (0: none tested):
    // beside fallback_peak_reserved, why a declined plan was declined.
    std::uint64_t tested_reserved = 0;
    // The first request of its last iteration with a miss that differed from it: which
    // one and how, so a report can say why iterations left it.
    PlanMiss last_miss;
  };

  SegmentSource& fallback();
  // The default pool's reserved bytes now: the planned figures and choices are its alone
  // (another model's pool that allocated and freed 200 MiB read as a steady overhead of 26).
  std::uint64_t reserved_now() const;
  PoolState& default_pool() const;
  BlockPool& arena_blocks() const;
  bool is_arena(const Segment& segment) const { return &segment == arena_; }
  Plan* matching_plan(std::uint32_t index) const;
  // Whether the arena, empty, holds declined `plan` (declined for its own arena's cost).
  bool holds_declined(const Plan& plan) const;
  // Serves declined `plan` again when holds_declined: true then.
  bool reconsider(Plan& plan);
  Plan* keyed_plan(std::uint64_t key) const;
  // A request no plan serves: learning or, in an iteration of a declined plan, declined.
  void count_learning(std::size_t size);
  // More misses in this iteration than a few strays.
  bool too_many_misses() const;
  // Whether a free block of the arena holds `size` bytes (a miss that would fit there).
  bool arena_holds(std::size_t size) const;
  void leave_plan();
  // Counts this iteration as left by `plan`, once however often it leaves.
  void count_left(Plan& plan);
  void open_to_fallback();
  // Plan::first_from for `plan`, learned from this iteration; `holes`: the extents of
  // the holes it places requests in.
  void simulate_first_hits(Plan& plan, const Extents& holes) const;
  // The requests still live at the end of this iteration that a block made before the
  // recording, of their size, outlived (an input made while the last one lives): the
  // next iteration's will be made so too. None when an iteration before is on record.
  std::vector<bool> copies_shown_earlier(const std::vector<bool>& planned) const;
  // Whether the iteration now ending made unkeyed `plan`'s requests, size for size.
  bool made_requests_of(const Plan& plan) const;
  // Whether the iteration now ending made a kept unkeyed plan's requests, size for size.
  bool repeats_a_plan() const;
  // `fallback_served`: no plan served the iteration, so its reserved peak is the
  // fallback's (beside an idle arena, if one was kept), the figure the plan's arena
  // must not pass.
  void learn(bool fallback_served);
  // The address of each tensor placed in a hole (0: none); `holes` gets the holes' extents.
  // `made_at`: each tensor's request's time in its iteration; `freed_in_next`: per request
  // of this iteration, when the next frees it (kOpen: not then).
  std::vector<std::uintptr_t> place_in_holes(const std::vector<TensorLifetime>& tensors,
                                             const std::vector<std::uint32_t>& made_at,
                                             const std::vector<std::uint32_t>& freed_in_next,
                                             std::uint64_t period, Extents& holes);
  // `block` is live and stays so through this iteration, as far as the serving plan
  // knows: made before the previous iteration, or in it and not freed in this one.
  bool lasts(const Block& block) const;
  Segment* segment_at(std::uintptr_t address) const;
  // Expandable: a block of `size` in the fallback's free space, right after a block
  // that lasts and clear of the serving plan's holes, or nullptr. Free space too short
  // there is grown into the unmapped space after it when that maps fewer granules.
  // Where request `index` was kept the last times first (take_where_kept).
  Block* take_clear_of_holes(std::uint32_t index, std::size_t size);
  // Expandable: request `index` of the serving plan, kept out of the arena, at the start
  // of a free block where it was placed one of the last two times, when that block holds
  // it and accept(block); nullptr when neither does.
  template <typename Accept>
  Block* take_where_kept(std::uint32_t index, std::size_t size, Accept&& accept);
  // Expandable: `size` at the start of the smallest free block that holds it, or nullptr.
  Block* take_smallest_free(std::size_t size);
  // Whether [begin, begin + size) misses every hole of the kept plans: where an arena may go.
  bool clear_of_plans_holes(std::uintptr_t begin, std::size_t size) const;
  // The end of the kept plans' highest hole (0: none uses holes).
  std::uintptr_t plans_holes_end() const;
  // The free block and the address, at its start or end, where a block of `size` would
  // go with clear(start) holding; {nullptr, 0} when none.
  template <typename Clear>
  std::pair<Block*, std::uintptr_t> find_anywhere_clear(std::size_t size, Clear&& clear) const;
  // That block, taken, or nullptr.
  template <typename Clear>
  Block* take_anywhere_clear(std::size_t size, Clear&& clear);
  // The arena's place when no free block clear of the holes holds it: at `at` in the
  // range's last segment, growing its unmapped last block `end` by `grow` bytes.
  struct PastTheHoles {
    Segment* last;
    Block* end;
    std::uintptr_t start;  // of the free space the arena goes in (once `end` has grown)
    std::uintptr_t at;
    std::size_t grow;
  };
  std::optional<PastTheHoles> past_the_holes(std::size_t size) const;
  Block* take_past_the_holes(std::size_t size);
  // The bytes an arena of `size` past the holes maps once the fallback's free memory is
  // released: the free blocks before the range's unmapped end join it, but for the
  // granule the first of them begins in.
  std::optional<std::uint64_t> growth_past_the_holes_once_released(std::size_t size) const;
  // The sizes of `plan`'s requests kept out of the arena and its holes that come before
  // its first planned one: made between the release and the arena, they need room then.
  static std::vector<std::size_t> leading_kept(const Plan& plan);
  // With `plan`'s holes: the free blocks' pieces that stay mapped, once the fallback's
  // free memory is released, right after blocks that last and clear of the holes, where
  // what it keeps out of the arena goes (take_clear_of_holes); past them that takes
  // granules of its own.
  std::vector<std::size_t> rooms_after_lasting_once_released(const Plan& plan) const;
  // The bytes of `sizes` that `rooms` do not hold, each placed (largest first) in the
  // first room with space left.
  static std::uint64_t bytes_beyond(std::vector<std::size_t> sizes, std::vector<std::size_t> rooms);
  // Closes (while a plan serves) or opens the free space of the fallback's large
  // segments, so that fallbacks do not take the holes the plan uses.
  void close_fallback_segments(bool closed);
  void keep_plan(std::unique_ptr<Plan> plan);
  void release_fallback_cache();
  std::size_t release_arena();
  // The arena `plan` needs. With the expandable fallback its bytes, carved out of the
  // range, so that what lasts and the arena round to granules once, not each on its own
  // (vit_b_16_infer: 1.0205 -> 1.0150), and an iteration that leaves the plan frees the
  // arena's granules around its hits (joined to the range); else a segment of whole granules.
  std::uint64_t arena_size(const Plan& plan) const;
  // The serving plan's arena, a segment of `bytes` in the arena's block pool, or nullptr.
  Segment* add_arena(std::uint64_t bytes);
  // Splits the range around `place`, a block taken for the arena: the arena segment.
  Segment* carve(Block* place);
  // The serving plan's arena carved where the last one joined the range, when that
  // space is free and mapped (no device call); false, nothing changed, otherwise.
  bool carve_where_it_was();
  // Counts `piece`, split from the range (1) or joined to it again (-1), as a segment.
  void count_carved(const Segment& piece, std::int64_t count);
  void prepare_arena();
  // The plan expected to serve the iteration starting now, or nullptr. `continues`: a
  // plan served the iteration now ending throughout.
  Plan* expected_plan(bool continues) const;
  // At an iteration boundary: the arena `plan` needs, reserved unless it must wait.
  void prepare_for(Plan& plan);
  // Bytes of the iteration before, still live, that the serving plan has freed in this
  // one: a new arena waits for them, so that it does not add to their bytes, while the
  // requests it leaves to the fallback meanwhile come to fewer bytes.
  std::uint64_t awaited_bytes() const;
  bool awaited(std::uint32_t index) const;
  // Reserves the arena, or declines the serving plan when the arena beside what the
  // fallback holds would pass the reserved peak of the iteration it was learned from.
  // False: declined, the iteration is the fallback's.
  bool reserve_arena();
  // The reserved bytes an arena of `bytes` would add now: a device segment
  // its bytes, a carved one the granules it would map.
  std::uint64_t arena_growth(std::uint64_t bytes) const;
  // Whether an arena of `bytes` that adds `growth` reserved bytes stays within the
  // serving plan's fallback_peak_reserved, its kept copies counted past the free space
  // the arena leaves (kept_copy_growth). Notes the reserved bytes it found (tested_reserved).
  bool arena_fits(std::uint64_t bytes, std::uint64_t growth);
  // The reserved bytes the plan's kept copies (Plan::kept_copy_bytes) add beyond `free`
  // bytes of the fallback's free space, in whole granules.
  std::uint64_t kept_copy_growth(const Plan& plan, std::uint64_t free) const;
  // Whether an arena of `bytes` for `plan` might fit once the fallback's free memory is
  // released: false when even the fewest granules it could map then pass the plan's
  // fallback peak. Such a plan is declined without the release, which would move
  // where the iteration's requests go and could raise the fallback's peak (a declined
  // plan cost an embedding model's training 2 granules: 1.031 against expandable's 1.010).
  // Notes the fewest reserved bytes it found (tested_reserved).
  bool arena_might_fit(Plan& plan, std::uint64_t bytes);
  // Whether `plan` served an iteration whole: its arena is reserved again untested.
  static bool proven(const Plan& plan);
  // The serving plan's arena does not pay: the iteration is the fallback's.
  void decline_serving_plan();
  void forget_steady_start();
  // Whether the iteration now ending made a declined plan's requests (or has its key):
  // nothing new to learn from it.
  bool repeats_a_declined_plan() const;
  // Whether an iteration no plan served is worth a planner run (kEagerLearns).
  bool worth_learning();
  // The allocator's device calls so far (creations and releases).
  std::int64_t device_calls() const;

  Allocator::Impl& allocator_;
  // Reserves and frees the arena; the fallback too unless expandable_ is set.
  CachingSource caching_;
  std::unique_ptr<ExpandableSource> expandable_;
  std::shared_ptr<const ArenaPlanner> planner_;
  std::vector<std::unique_ptr<Plan>> plans_;
  // The shapes (shape_id) of the plans evicted last, oldest first, at most
  // kEvictedShapesKept: a plan learned for one of them again was evicted too soon.
  std::deque<std::uint64_t> evicted_shapes_;
  Segment* arena_ = nullptr;  // in the default pool's HBM large block pool
  // An arena carved out of the range: the range's parts before and after it, if any.
  Segment* carved_before_ = nullptr;
  Segment* carved_after_ = nullptr;
  // Where the last arena carved out of the range was when it joined the range again
  // (0: none since one was carved): carve_where_it_was.
  std::uintptr_t joined_at_ = 0;
  Recording current_;
  Recording previous_;
  Plan* served_ = nullptr;  // the plan serving this iteration
  // The previous iteration learned or was served: plans should serve this one.
  bool plans_expected_ = false;
  bool abandoned_ = false;  // this iteration left its plan (too many fallbacks)
  bool left_ = false;       // this iteration left the plan it chose (abandoned or leave_plan)
  // The plans this iteration counted as left (count_left): each counts it once.
  std::vector<const Plan*> left_plans_;
  std::uint32_t left_streak_ = 0;  // iterations in a row that left their plan
  bool pending_ = false;           // take() recorded a request not yet allocated
  // The request take() saw last is one the serving plan keeps out of the arena and no
  // free space clear of its holes could take (expandable).
  bool kept_out_ = false;
  // The request take() saw last is one the serving plan keeps out of the arena, which the
  // fallback serves: allocated() notes where (Plan::kept_at).
  bool unplanned_ = false;
  // The request take() saw last is a miss: were the fallback to grow for it, the
  // iteration leaves its plan first (grow).
  bool missed_ = false;
  std::uint64_t iteration_fallbacks_ = 0;
  std::uint64_t iteration_lasting_ = 0;  // requests the plan keeps out of the arena
  // The iteration's plan was declined (its key's, or at its arena's reservation): what
  // no plan serves counts as declined, not learning.
  bool declined_iteration_ = false;
  // Requests counted as learning, this iteration: declined once its end shows that it
  // repeats a declined unkeyed plan.
  std::uint64_t iteration_learning_ = 0;
  std::uint64_t iteration_learning_bytes_ = 0;
  // Fallbacks the plan did not foresee: another size, or its range not free.
  std::uint64_t iteration_misses_ = 0;
  std::uint64_t iteration_miss_bytes_ = 0;  // of the misses
  PlannedStats stats_;
  std::uint64_t iteration_peak_reserved_ = 0;   // reserved bytes, this iteration so far
  std::uint32_t iteration_peak_time_ = 0;       // the recorded event that reached it
  std::uint64_t iteration_peak_requested_ = 0;  // requested bytes, this iteration so far
  // Learning while no plan serves: iterations learned in a row that no plan served
  // after, the recent iterations' shapes (hashes of their sizes), iterations passed
  // over since the last learning, and how many to pass over before the next.
  std::uint32_t idle_learns_ = 0;
  std::vector<std::uint64_t> recent_shapes_;
  std::uint32_t passed_over_ = 0;
  std::uint32_t learn_interval_ = 1;
  bool steady_ = false;                                // a plan has served an iteration
  std::optional<std::int64_t> device_calls_at_arena_;  // when the arena was first reserved
  // Of the device calls since, those for arenas: reserving and releasing them, and the
  // fallback's cache released for one (PlannedStats::arena_device_calls).
  std::uint64_t arena_device_calls_ = 0;
  // Adds the device calls made in its scope, after the first arena, to arena_device_calls_.
  struct ArenaCalls {
    explicit ArenaCalls(PlannedSource& counted) : source(counted), before(counted.device_calls()) {}
    ~ArenaCalls();
    ArenaCalls(const ArenaCalls&) = delete;
    ArenaCalls& operator=(const ArenaCalls&) = delete;
    PlannedSource& source;
    std::int64_t before;
  };
  std::uint64_t arena_wanted_ = 0;    // bytes of the arena to reserve, once awaiting_ ends
  std::uint64_t awaiting_ = 0;        // awaited_bytes() not yet freed
  std::uint64_t deferred_bytes_ = 0;  // requested in this iteration while awaiting_
};

}  // namespace npumem::core
