#include "core/strategy/planned_source.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/allocator_impl.h"
#include "core/pool/align.h"
#include "core/strategy/free_block_starts.h"
#include "npumem/errors.h"

namespace npumem::core {
namespace {

// A plan is chosen among those whose first requests match this iteration's so far;
// past this many requests the choice is final.
constexpr std::uint32_t kSignatureRequests = 16;
// Fallbacks an iteration may have before it counts as having left its plan (also at
// least 1/64 of the plan's requests).
constexpr std::uint64_t kStrayFallbacks = 4;
// Nor may its fallbacks come to more than this share of the arena when the arena's free
// space could hold the last of them: that one and the rest then go to the fallback with
// the arena's free space, not beside the arena (a GiB tensor whose size changes each
// iteration among small ones that repeat: 1.50x peak requested, caching 1.016x).
constexpr std::uint64_t kStrayArenaShareDivisor = 16;
// A miss the fallback must grow for leaves the plan once the iteration's misses come to
// more than this share of the arena (grow); smaller ones are strays, which one granule
// of the fallback's holds from then on (leaving the plan for each of them put them in
// the arena's free space and moved the requests after them: a random sequence length
// peaked at 1.023x peak requested, 1.006x as strays).
constexpr std::uint64_t kGrowingMissArenaShareDivisor = 64;
// After this many iterations in a row left the plan their first requests chose, plans
// are chosen again only once an iteration repeats a kept plan's requests whole: shapes
// that do not repeat (random lengths, a leak) then cost no arena beside the fallback.
constexpr std::uint32_t kLeftIterations = 2;
// A shape whose plan missed, was learned again, and missed again this many times in a
// row is declined: learning cannot place it (two models served in turn, each output
// kept into the other's iteration, re-learned one of them every iteration, 22 planner
// runs in 40 iterations, at the fallback's memory all the same).
constexpr std::uint32_t kMissedRelearns = 2;
// After this many iterations in a row were learned and then served by no plan (shapes
// that never repeat: every batch of another length), an iteration no plan served is
// learned only when its requests repeat an iteration's of the last kRecentShapes, or
// once the iterations passed over since the last learning reach an interval that
// doubles up to kMaxLearnInterval: learning is one planner run per iteration. Four, not
// two: with caching's fallback, mobilenet_v2_infer's batch sizes came back too late
// for two (1.108x requested, caching alone 1.088x; 1.048x now).
constexpr std::uint32_t kEagerLearns = 4;
constexpr std::size_t kRecentShapes = 64;
constexpr std::uint32_t kMaxLearnInterval = 64;
// Holes smaller than this in the fallback's segments are not planned into: they would
// only lengthen the list each tensor placed scans. Not 1 MiB: an LSTM's training steps
// planned into the ones below it too ran at 1.0023x their requested peak, not 1.0424x,
// and two models in turn stopped re-learning.
constexpr std::size_t kMinHole = 64 << 10;
constexpr int kHoleRounds = 64;
// A first iteration that leaves more than a quarter of its plan's lower bound still
// live at its end (gradients, new optimizer state) is not planned alone: which of them
// go in the next iteration shows only there, so the next one is learned too.
constexpr std::uint64_t kOpenShareDivisor = 4;
// Event times are 32-bit; an iteration longer than this is not recorded past it.
constexpr std::uint32_t kMaxEvents = 1u << 31;

// What Block::sequence holds: the iteration that made the block and its request index.
std::uint64_t made_in(const Block& block) {
  return block.sequence >> 32;
}
std::uint32_t request_index(const Block& block) {
  return static_cast<std::uint32_t>(block.sequence & 0xffffffffu);
}

// The end of the granule of segment `s` that `address` lies in (`address` itself on a
// boundary): of a free block starting there, the piece a release leaves mapped when a
// neighbour keeps that granule.
std::uintptr_t granule_end(const Segment& s, std::uintptr_t address, std::size_t granule) {
  return s.granule_base + round_up(address - s.granule_base, granule);
}

}  // namespace

PlannedSource::PlannedSource(Allocator::Impl& allocator,
                             std::shared_ptr<const ArenaPlanner> planner)
    : allocator_(allocator), caching_(allocator), planner_(std::move(planner)) {
  if (!planner_) throw ConfigError("the planned strategy needs a planner (ArenaPlanner)");
  const PlannedFallback wanted = allocator.config.planned_fallback;
  const bool maps = allocator.device->supports_virtual_memory();
  if (wanted == PlannedFallback::expandable && !maps) {
    throw ConfigError("planned_fallback:expandable needs a device with virtual-memory calls; " +
                      allocator.device->name() + " has none (use caching or auto)");
  }
  if (wanted == PlannedFallback::expandable || (wanted == PlannedFallback::automatic && maps)) {
    // Plans that use the range's holes hold addresses in it.
    expandable_ =
        std::make_unique<ExpandableSource>(allocator, [this] { return plans_holes_end() == 0; });
  }
}

SegmentSource& PlannedSource::fallback() {
  if (expandable_) return *expandable_;
  return caching_;
}

PoolState& PlannedSource::default_pool() const {
  return *allocator_.pools.front();
}

std::uint64_t PlannedSource::reserved_now() const {
  return static_cast<std::uint64_t>(allocator_.stats_of(default_pool()).reserved_bytes.all.current);
}

BlockPool& PlannedSource::arena_blocks() const {
  return default_pool().block_pool(Tier::hbm, PoolKind::large);
}

// Before the fallback grows for a miss (past the strays' share), the iteration leaves
// its plan: the arena's free space is the fallback's, not idle beside new memory (a
// tensor three times larger in a third of the iterations, at the peak: 1.042x peak
// requested, now 1.001x as expandable). When no free block of the arena holds the
// request, an arena carved out of the expandable range joins the range, live blocks
// and all, as it does for any growth of an iteration no plan serves: as a segment of
// its own its free end could not grow, nor its free granules go where the request
// needs them (iterations that begin alike and differ in GiB tensors: 1.305x, now
// 1.001x). The next iteration a plan serves carves an arena again.
// While a plan serves, caching's fallbacks are strays: a segment of their own size
// each, not one shared with room for more. Expandable granules are packed anyway.
GrowResult PlannedSource::grow(PoolState& pool, BlockPool& blocks, std::size_t size) {
  if (arena_ != nullptr && &blocks == &arena_blocks()) {
    if (missed_ && served_ != nullptr && !abandoned_ &&
        iteration_miss_bytes_ * kGrowingMissArenaShareDivisor > arena_->size) {
      abandoned_ = true;
      left_ = true;
      open_to_fallback();
      if (arena_holds(size)) return GrowResult::ok;
    }
    if (expandable_ && arena_->carved && (served_ == nullptr || abandoned_)) {
      release_arena();  // its free blocks may now hold the request, merged at the seams
      if (const Block* largest = blocks.largest_free_block();
          largest != nullptr && largest->size >= size) {
        return GrowResult::ok;
      }
    }
  }
  if (expandable_ || served_ == nullptr || abandoned_ || blocks.kind() == PoolKind::small) {
    return fallback().grow(pool, blocks, size);
  }
  return caching_.add_segment(pool, blocks, round_up(size, allocator_.granularity(blocks.tier())));
}

// Expandable: what the serving plan keeps out of the arena (outputs kept, state) and
// finds no room for clear of the plan's holes takes the small kind's range, so that
// it never lands in a hole, where it would stay; everything else shares one range, as
// in the expandable strategy.
PoolKind PlannedSource::kind_for(std::size_t size) const {
  if (!expandable_) return caching_.kind_for(size);
  return kept_out_ ? PoolKind::small : expandable_->kind_for(size);
}

std::size_t PlannedSource::mapping_granule(Tier tier, std::size_t size) const {
  return expandable_ ? expandable_->mapping_granule(tier, size) : 0;
}

// Planned requests are carved at their address in the arena and in the holes of the
// expandable range: both found by address, not by a walk of the segment.
void PlannedSource::pool_created(PoolState& pool) {
  if (expandable_ && &pool == &default_pool()) arena_blocks().index_addresses();
}

// The arena is a cache like any other: reclaim and empty_cache give it back when
// nothing lives in it, and the next iteration boundary reserves it again.
std::size_t PlannedSource::release(PoolState& pool, BlockPool& blocks) {
  std::size_t released = 0;
  if (arena_ != nullptr && arena_->allocated_blocks == 0 && &blocks == &arena_blocks()) {
    released = release_arena();
  }
  return released + fallback().release(pool, blocks);
}

std::size_t PlannedSource::release_removed(PoolState& pool, BlockPool& blocks) {
  return fallback().release_removed(pool, blocks);
}

// The expandable fallback frees its range alone (an arena carved out of it goes with
// it): an arena beside it goes first.
void PlannedSource::release_all(PoolState& pool, BlockPool& blocks) {
  if (&blocks == &arena_blocks() && arena_ != nullptr) {
    if (expandable_ && !arena_->carved) {
      allocator_.device->free_segment(blocks.tier(), reinterpret_cast<void*>(arena_->address),
                                      arena_->size);
    }
    arena_ = nullptr;
    carved_before_ = carved_after_ = nullptr;
  }
  fallback().release_all(pool, blocks);
  blocks.clear();
}

// Unkeyed iterations choose among the unkeyed plans.
PlannedSource::Plan* PlannedSource::matching_plan(std::uint32_t index) const {
  for (const auto& plan : plans_) {
    if (plan->key || plan->sizes.size() <= index) continue;
    if (plan->declined && !holds_declined(*plan)) continue;
    bool same = true;
    for (std::uint32_t i = 0; i <= index && same; ++i) {
      same = plan->sizes[i] == current_.requests[i].size;
    }
    if (same) return plan.get();
  }
  return nullptr;
}

// A plan declined before an arena existed (its own would have passed the fallback's
// peak) costs no reservation once another plan's arena holds it: shapes served in turn
// settle on the largest. Declined for good, two keyed shapes released and reserved
// the arena at every turn (559 device calls in 60 iterations, 1.102 against
// expandable's 1.033).
bool PlannedSource::holds_declined(const Plan& plan) const {
  return !plan.declined_for_misses && arena_ != nullptr && arena_->allocated_blocks == 0 &&
         arena_size(plan) != 0 && arena_size(plan) <= arena_->size;
}

bool PlannedSource::reconsider(Plan& plan) {
  if (!holds_declined(plan)) return false;
  plan.declined = false;
  return true;
}

PlannedSource::Plan* PlannedSource::keyed_plan(std::uint64_t key) const {
  for (const auto& plan : plans_) {
    if (plan->key == key) return plan.get();
  }
  return nullptr;
}

// A second request among the first ones that no plan expects: another shape that began
// like a plan's (an evaluation after training steps that starts with the same tensors).
// It is learned as a shape of its own, and the arena's free space is the fallback's at
// once: waiting for too_many_misses() let the fallback grow beside an idle arena
// (mobilenet_v3 train+eval capture: 1.191 against expandable's 1.026).
void PlannedSource::leave_plan() {
  if (served_ != nullptr) count_left(*served_);
  served_ = nullptr;
  left_ = true;
  arena_wanted_ = 0;
  open_to_fallback();
}

void PlannedSource::count_left(Plan& plan) {
  if (std::find(left_plans_.begin(), left_plans_.end(), &plan) != left_plans_.end()) return;
  left_plans_.push_back(&plan);
  ++plan.iterations_left;
}

// The arena's free space and the fallback's segments are the fallback's again.
void PlannedSource::open_to_fallback() {
  if (arena_ != nullptr) arena_blocks().set_closed(*arena_, false);
  close_fallback_segments(false);
}

bool PlannedSource::made_requests_of(const Plan& plan) const {
  return !plan.key && plan.sizes.size() == current_.requests.size() &&
         std::equal(plan.sizes.begin(), plan.sizes.end(), current_.requests.begin(),
                    [](std::size_t size, const Request& r) { return size == r.size; });
}

bool PlannedSource::repeats_a_plan() const {
  return std::any_of(plans_.begin(), plans_.end(),
                     [&](const auto& plan) { return made_requests_of(*plan); });
}

bool PlannedSource::repeats_a_declined_plan() const {
  return std::any_of(plans_.begin(), plans_.end(), [&](const auto& plan) {
    if (!plan->declined) return false;
    return current_.key ? plan->key == current_.key : made_requests_of(*plan);
  });
}

bool PlannedSource::worth_learning() {
  if (idle_learns_ < kEagerLearns) {
    ++idle_learns_;
    return true;
  }
  // FNV-1a over the sizes: a collision only learns an iteration early.
  std::uint64_t shape = 14695981039346656037ull;
  for (const Request& r : current_.requests) shape = (shape ^ r.size) * 1099511628211ull;
  const bool repeated =
      std::find(recent_shapes_.begin(), recent_shapes_.end(), shape) != recent_shapes_.end();
  if (!repeated) {
    if (recent_shapes_.size() == kRecentShapes) recent_shapes_.erase(recent_shapes_.begin());
    recent_shapes_.push_back(shape);
  }
  if (!repeated && ++passed_over_ < learn_interval_) {
    ++stats_.iterations_not_learned;
    return false;
  }
  passed_over_ = 0;
  learn_interval_ = std::min(learn_interval_ * 2, kMaxLearnInterval);
  return true;
}

void PlannedSource::count_learning(std::size_t size) {
  if (declined_iteration_) {
    ++stats_.declined;
    stats_.declined_bytes += size;
    return;
  }
  ++stats_.learning;
  stats_.learning_bytes += size;
  ++iteration_learning_;
  iteration_learning_bytes_ += size;
}

bool PlannedSource::too_many_misses() const {
  return iteration_misses_ > kStrayFallbacks && iteration_misses_ * 64 > served_->sizes.size();
}

Block* PlannedSource::take(PoolState& pool, std::size_t size) {
  pending_ = false;
  kept_out_ = false;
  unplanned_ = false;
  missed_ = false;
  if (&pool != &default_pool() || current_.iteration == 0 || current_.clock >= kMaxEvents) {
    return nullptr;
  }
  const auto index = static_cast<std::uint32_t>(current_.requests.size());
  current_.requests.push_back({size, current_.clock++, kOpen});
  pending_ = true;
  const bool on_plan =
      served_ != nullptr && index < served_->sizes.size() && served_->sizes[index] == size;
  if (current_.key) {
    if (index == 0) {
      served_ = keyed_plan(*current_.key);
      if (served_ != nullptr && served_->declined && !reconsider(*served_)) {
        served_ = nullptr;
        declined_iteration_ = true;
      }
    }
  } else if (!on_plan && index < kSignatureRequests) {
    Plan* plan = left_streak_ < kLeftIterations ? matching_plan(index) : nullptr;
    if (plan != nullptr && plan->declined) reconsider(*plan);
    if (plan != nullptr && index != 0 && plan != served_) {
      // Another plan that began alike: the arena was prepared for the first. Holding
      // blocks, it cannot grow, and a larger plan would miss at every offset past its
      // end (under caching, a segment of its own each: a train+eval capture peaked at
      // 1.27x requested, caching alone 1.07x).
      served_ = plan;
      if (arena_ != nullptr && arena_->allocated_blocks != 0 && arena_->size < arena_size(*plan)) {
        leave_plan();
      } else {
        prepare_arena();
      }
    } else if (plan != nullptr) {
      served_ = plan;
    } else if (served_ != nullptr && iteration_misses_ != 0) {
      leave_plan();
    }
  }
  if (index == 0) prepare_arena();
  if (served_ == nullptr) {
    count_learning(size);
    return nullptr;
  }
  // What the plan keeps out of the arena goes to the fallback anyway: no reason to
  // reserve the arena, nor a deferral.
  const bool unplanned = index < served_->sizes.size() && served_->sizes[index] == size &&
                         served_->offsets[index] == kNoSlot && served_->hole_address[index] == 0;
  const bool deferrable = deferred_bytes_ + size <= awaiting_;
  if (arena_wanted_ != 0 && !unplanned && !deferrable && !reserve_arena()) {
    count_learning(size);
    return nullptr;
  }
  served_->last_used = current_.iteration;
  if (arena_wanted_ != 0 && !unplanned) {
    deferred_bytes_ += size;
    ++stats_.deferred;
    stats_.deferred_bytes += size;
    return nullptr;
  }
  if (!abandoned_ && too_many_misses()) {
    // The iteration has left its plan: the rest is the fallback's, with the arena's
    // free space, rather than strays beside a reserved arena.
    abandoned_ = true;
    left_ = true;
    open_to_fallback();
  }
  Block* block = nullptr;
  if (!abandoned_ && !unplanned && index < served_->sizes.size() && served_->sizes[index] == size) {
    // In a hole at its address, else in the arena at its offset (first_from likewise).
    const std::uintptr_t hole = served_->hole_address[index];
    Segment* segment = nullptr;
    std::uintptr_t base = 0;
    if (hole != 0) {
      segment = segment_at(hole);
    } else if (arena_ != nullptr && served_->offsets[index] + size <= arena_->size) {
      segment = arena_;
      base = arena_->address;
    }
    if (segment != nullptr) {
      std::uintptr_t* const from = &served_->held_from[index];
      const std::uintptr_t last = *from;
      if (last == 0 && served_->first_from[index] != kNoSlot) {
        *from = base + served_->first_from[index];
      }
      const std::uintptr_t address = hole != 0 ? hole : base + served_->offsets[index];
      block = arena_blocks().take_at(*segment, address, size, from, served_->held_before[index]);
      if (block != nullptr && last != 0 && *from != last) served_->held_before[index] = last;
    }
  }
  if (block != nullptr) {
    // A plan serves from its first hit: an iteration on a plan whose every request
    // missed was reported served, with steady figures, at 0 hits.
    if (!steady_) stats_.first_served_iteration = current_.iteration;
    steady_ = true;
    ++stats_.hits;
    stats_.hit_bytes += size;
  } else if (unplanned) {
    if (expandable_ && !served_->hole_ranges.empty()) {
      block = take_clear_of_holes(index, size);
      kept_out_ = block == nullptr;
    } else if (expandable_) {
      block = take_where_kept(index, size, [](const Block&) { return true; });
      if (block == nullptr) block = take_smallest_free(size);
    }
    unplanned_ = true;
    ++stats_.lasting;
    stats_.lasting_bytes += size;
    ++iteration_lasting_;
  } else {
    if (iteration_misses_ == 0) {
      const std::size_t planned = index < served_->sizes.size() ? served_->sizes[index] : 0;
      served_->last_miss = {true, index, size, planned, planned == size && !abandoned_};
    }
    ++stats_.fallbacks;
    stats_.fallback_bytes += size;
    ++iteration_fallbacks_;
    ++iteration_misses_;
    iteration_miss_bytes_ += size;
    missed_ = true;
    if (!abandoned_ && arena_ != nullptr &&
        iteration_miss_bytes_ * kStrayArenaShareDivisor > arena_->size && arena_holds(size)) {
      abandoned_ = true;
      left_ = true;
      open_to_fallback();
    }
  }
  return block;
}

bool PlannedSource::arena_holds(std::size_t size) const {
  for (const Block* b = arena_->first; b != nullptr; b = b->next) {
    if (!b->allocated && b->size >= size) return true;
  }
  return false;
}

void PlannedSource::allocated(Block& block) {
  block.sequence =
      pending_ ? (current_.iteration << 32) | (current_.requests.size() - 1) : std::uint64_t{0};
  // Where take_where_kept looks next time: only in the arena's block pool.
  const std::size_t index = current_.requests.size() - 1;
  const Segment& segment = *block.segment;
  if (unplanned_ && expandable_ &&
      &segment.pool->block_pool(segment.tier, segment.kind) == &arena_blocks() &&
      served_->kept_at[index] != block.address) {
    served_->kept_before[index] = served_->kept_at[index];
    served_->kept_at[index] = block.address;
  }
  unplanned_ = false;
  pending_ = false;
  const std::uint64_t reserved = reserved_now();
  if (reserved > iteration_peak_reserved_) {
    iteration_peak_reserved_ = reserved;
    iteration_peak_time_ = current_.clock;
  }
  const auto requested = static_cast<std::uint64_t>(allocator_.requested_bytes_now(default_pool()));
  iteration_peak_requested_ = std::max(iteration_peak_requested_, requested);
  if (steady_) {
    stats_.steady_peak_reserved_bytes = std::max(stats_.steady_peak_reserved_bytes, reserved);
    stats_.steady_peak_requested_bytes = std::max(stats_.steady_peak_requested_bytes, requested);
  }
}

void PlannedSource::freed(const Block& block) {
  if (block.sequence == 0 && current_.iteration != 0 && previous_.requests.empty() &&
      block.segment->pool == &default_pool()) {
    current_.earlier_frees.push_back({allocator_.block_size(block.requested), current_.clock});
  }
  if (block.sequence != 0 && current_.clock < kMaxEvents) {
    const std::uint64_t iteration = made_in(block);
    const std::uint32_t index = request_index(block);
    if (iteration == current_.iteration) {
      current_.requests[index].free_time = current_.clock++;
    } else if (iteration == previous_.iteration) {
      current_.carried.push_back({index, current_.clock++});
      // min: the plan that serves may change in the first requests.
      if (arena_wanted_ != 0 && awaited(index)) {
        awaiting_ -= std::min(awaiting_, std::uint64_t{previous_.requests[index].size});
      }
    }
  }
}

bool PlannedSource::release_block(PoolState& pool, Block* block) {
  // While plans serve, caching's fallback keeps no cache: a segment it no longer uses
  // goes back at once, so the reserved bytes stay at the arena plus what lives.
  // Expandable granules stay for the next stray: they are packed, not a segment each.
  const Segment& segment = *block->segment;
  if (expandable_ || (served_ == nullptr && !plans_expected_) || abandoned_ || is_arena(segment) ||
      segment.kind != PoolKind::large || segment.allocated_blocks != 1) {
    return false;
  }
  BlockPool& blocks = pool.block_pool(segment.tier, segment.kind);
  blocks.release(block);
  caching_.release_except(pool, blocks, [&](const Segment& s) { return is_arena(s); });
  return true;
}

void PlannedSource::iteration_boundary(std::optional<std::uint64_t> key) {
  if (current_.iteration != 0) {
    if (served_ != nullptr && !left_) {
      idle_learns_ = 0;
      learn_interval_ = 1;
      passed_over_ = 0;
    }
    if (left_) {
      ++left_streak_;
    } else if (served_ != nullptr || (left_streak_ >= kLeftIterations && repeats_a_plan())) {
      left_streak_ = 0;
    }
    bool learn_now = false;
    if (served_ != nullptr) {
      ++served_->iterations_served;
      if (left_) {  // abandoned for its misses
        ++served_->iterations_abandoned;
        count_left(*served_);
        // Left without a hit before any plan hit: no plan has served yet (a key whose
        // iterations alternate sizes read "since a plan served, from iteration 2").
        if (stats_.hits == 0) forget_steady_start();
      }
      served_->fallback_streak = iteration_fallbacks_ == 0 ? 0 : served_->fallback_streak + 1;
      // Re-learn when fallbacks are more than a few strays, keep happening, or come
      // in the plan's first iteration; so too requests it kept out of the arena, once,
      // when it was learned without the iteration before: that iteration shows which
      // of them outlive the iteration and which go in the next.
      const bool unproven_lasting = iteration_lasting_ != 0 && !served_->saw_previous;
      const bool missed_much = too_many_misses() || served_->fallback_streak >= 2;
      learn_now = missed_much || ((iteration_fallbacks_ != 0 || unproven_lasting) &&
                                  served_->iterations_served == 1);
      served_->missed = missed_much || left_;
      if (iteration_misses_ == 0 && !left_) served_->missed_relearns = 0;
      if (served_->missed && served_->missed_relearns >= kMissedRelearns) {
        served_->declined = true;
        served_->declined_for_misses = true;
        learn_now = false;
      }
    } else if (repeats_a_declined_plan()) {
      // Unkeyed, its requests counted as learning until its end showed its shape.
      stats_.learning -= iteration_learning_;
      stats_.learning_bytes -= iteration_learning_bytes_;
      stats_.declined += iteration_learning_;
      stats_.declined_bytes += iteration_learning_bytes_;
    } else {
      learn_now = !current_.requests.empty() && worth_learning();
    }
    if (learn_now) {
      const bool fallback_served = served_ == nullptr;
      // First, for caching's holes: what stays has live blocks, its holes are stable.
      if (!expandable_) release_fallback_cache();
      learn(fallback_served);
    }
    plans_expected_ = learn_now || served_ != nullptr;
  }
  const bool continues = served_ != nullptr && !left_;
  served_ = nullptr;
  abandoned_ = false;
  left_ = false;
  left_plans_.clear();
  awaiting_ = 0;
  deferred_bytes_ = 0;
  arena_wanted_ = 0;
  iteration_fallbacks_ = 0;
  iteration_lasting_ = 0;
  iteration_learning_ = 0;
  iteration_learning_bytes_ = 0;
  declined_iteration_ = false;
  iteration_misses_ = 0;
  iteration_miss_bytes_ = 0;
  iteration_peak_reserved_ = reserved_now();
  iteration_peak_time_ = 0;
  iteration_peak_requested_ = 0;
  previous_ = std::move(current_);
  current_ = Recording{};
  current_.iteration = previous_.iteration + 1;
  current_.key = key;
  current_.requests.reserve(previous_.requests.size());
  if (arena_ != nullptr) arena_blocks().set_closed(*arena_, true);
  if (Plan* next = expected_plan(continues)) prepare_for(*next);
}

// Keyed: the plan learned under the key. Unkeyed: the plan that served the iteration
// now ending (or was re-learned from it), unless that iteration left its plan. A plan
// just learned from an iteration no plan served is not presumed: on mobilenet_v2_infer,
// whose batch sizes vary, the next iteration is another shape, and the fallback's
// memory released for its arena changed what later plans are measured against (1.018
// -> 1.028, one plan declined).
PlannedSource::Plan* PlannedSource::expected_plan(bool continues) const {
  Plan* plan = nullptr;
  if (current_.key) {
    plan = keyed_plan(*current_.key);
  } else if (continues && left_streak_ < kLeftIterations) {
    for (const auto& kept : plans_) {
      if (!kept->key && kept->last_used == previous_.iteration) plan = kept.get();
    }
  }
  return plan != nullptr && !plan->declined ? plan : nullptr;
}

// The arena the next iteration's plan needs is reserved now, not inside its first
// allocations (the fallback's release and the device segment took 10-15 us there),
// unless the previous iteration's tensors it waits for are still live: then the first
// planned request past them reserves it, as before.
void PlannedSource::prepare_for(Plan& plan) {
  served_ = &plan;
  const std::uint64_t needed = arena_size(plan);
  if (arena_ == nullptr && needed != 0 && awaited_bytes() == 0 && !carve_where_it_was()) {
    if (!proven(plan) && !arena_might_fit(plan, needed)) {
      decline_serving_plan();  // as reserve_arena would at its first request
      return;
    }
    release_fallback_cache();
    arena_wanted_ = needed;
    if (arena_fits(needed, arena_growth(needed))) reserve_arena();
  }
  served_ = nullptr;
  arena_wanted_ = 0;
}

// Lifetimes on the iteration's cycle: a request freed in the next iteration (found by
// the previous iteration's request at the same index, freed during this one) lives
// past the end; one still live with no such evidence outlives its iteration (weights,
// optimizer state, a cache) and gets no place in the arena. The cycle is cut where
// the fewest planned bytes live, and what lives across the cut is planned for the
// whole iteration.
void PlannedSource::learn(bool fallback_served) {
  const Recording& rec = current_;
  const std::uint64_t period = rec.clock;
  if (period == 0) return;
  std::vector<std::uint32_t> freed_next(previous_.requests.size(), kOpen);
  for (const CarriedFree& c : rec.carried) freed_next[c.index] = c.time;

  const std::size_t n = rec.requests.size();
  std::vector<std::uint64_t> first(n), last(n);
  std::vector<bool> planned(n, false);
  std::vector<std::int64_t> live_change(period + 1, 0);
  const auto add_live = [&](std::uint64_t from, std::uint64_t to, std::int64_t bytes) {
    live_change[from] += bytes;
    live_change[to + 1] -= bytes;
  };
  for (std::size_t j = 0; j < n; ++j) {
    const Request& r = rec.requests[j];
    first[j] = r.alloc_time;
    if (r.free_time != kOpen) {
      last[j] = r.free_time;
    } else if (j < previous_.requests.size() && previous_.requests[j].size == r.size &&
               freed_next[j] != kOpen && freed_next[j] < r.alloc_time) {
      last[j] = period + freed_next[j];
    } else {
      continue;
    }
    planned[j] = true;
    const auto bytes = static_cast<std::int64_t>(r.size);
    if (last[j] < period) {
      add_live(first[j], last[j], bytes);
    } else {
      add_live(first[j], period - 1, bytes);
      add_live(0, last[j] - period, bytes);
    }
  }
  std::uint64_t cut = 0;
  std::int64_t live = 0;
  std::int64_t least = 0;
  for (std::uint64_t t = 0; t < period; ++t) {
    live += live_change[t];
    if (t == 0 || live < least) {
      least = live;
      cut = t;
    }
  }
  std::vector<TensorLifetime> lifetimes;
  std::vector<std::size_t> owners;
  for (std::size_t j = 0; j < n; ++j) {
    if (!planned[j]) continue;
    const bool across_cut =
        (first[j] < cut && cut <= last[j]) || (last[j] >= period && cut <= last[j] - period);
    TensorLifetime lifetime{rec.requests[j].size, 0, period - 1};
    if (!across_cut) {
      lifetime.first_op = (first[j] + period - cut) % period;
      lifetime.last_op = lifetime.first_op + (last[j] - first[j]);
    }
    lifetimes.push_back(lifetime);
    owners.push_back(j);
  }
  std::vector<std::uint32_t> made_at;
  made_at.reserve(owners.size());
  for (const std::size_t j : owners) made_at.push_back(rec.requests[j].alloc_time);
  std::vector<std::uint32_t> freed_in_next(n, kOpen);
  for (std::size_t j = 0; j < n; ++j) {
    if (planned[j] && last[j] >= period) {
      freed_in_next[j] = static_cast<std::uint32_t>(last[j] - period);
    }
  }
  Extents holes;
  const std::vector<std::uintptr_t> in_hole =
      place_in_holes(lifetimes, made_at, freed_in_next, period, holes);
  std::vector<TensorLifetime> in_arena;
  for (std::size_t i = 0; i < lifetimes.size(); ++i) {
    if (in_hole[i] == 0) in_arena.push_back(lifetimes[i]);
  }
  const ArenaLayout layout = planner_->lay_out(in_arena, allocator_.config.granule);
  if (previous_.requests.empty()) {
    std::uint64_t open_bytes = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (!planned[j]) open_bytes += rec.requests[j].size;
    }
    if (open_bytes * kOpenShareDivisor > layout.lower_bound_bytes) return;
  }

  auto plan = std::make_unique<Plan>();
  plan->key = rec.key;
  plan->sizes.reserve(n);
  for (const Request& r : rec.requests) plan->sizes.push_back(r.size);
  plan->offsets.assign(n, kNoSlot);
  plan->freed_next.assign(n, false);
  // Also a request still live whose predecessor at its index went during this
  // iteration, though of another size or only after it was made (an input, an output
  // kept until the next batch): the fallback holds it, but it goes in the next.
  for (std::size_t j = 0; j < n; ++j) {
    plan->freed_next[j] =
        (planned[j] && last[j] >= period) ||
        (rec.requests[j].free_time == kOpen && j < freed_next.size() && freed_next[j] != kOpen);
  }
  const std::vector<bool> copied = copies_shown_earlier(planned);
  for (std::size_t j = 0; j < n; ++j) {
    if (!planned[j] && (plan->freed_next[j] || copied[j])) {
      plan->kept_copy_bytes += rec.requests[j].size;
    }
  }
  plan->hole_address.assign(n, 0);
  plan->kept_at.assign(n, 0);
  plan->kept_before.assign(n, 0);
  plan->held_from.assign(n, 0);
  plan->held_before.assign(n, 0);
  for (std::size_t i = 0, next = 0; i < owners.size(); ++i) {
    if (in_hole[i] != 0) {
      plan->hole_address[owners[i]] = in_hole[i];
    } else {
      plan->offsets[owners[i]] = layout.offsets[next++];
    }
  }
  simulate_first_hits(*plan, holes);
  for (std::size_t j = 0; j < n; ++j) {
    if (plan->hole_address[j] != 0) {
      plan->hole_ranges.emplace_back(plan->hole_address[j], plan->hole_address[j] + plan->sizes[j]);
    }
  }
  std::sort(plan->hole_ranges.begin(), plan->hole_ranges.end());
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> merged;
  for (const auto& range : plan->hole_ranges) {
    if (!merged.empty() && range.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, range.second);
    } else {
      merged.push_back(range);
    }
  }
  plan->hole_ranges = std::move(merged);
  plan->arena_bytes = layout.arena_bytes;
  plan->lower_bound_bytes = layout.lower_bound_bytes;
  plan->planned_requests = owners.size();
  plan->last_used = rec.iteration;
  plan->saw_previous = !previous_.requests.empty();
  if (fallback_served) {
    // What the iteration made after its peak and kept (optimizer state made at its end)
    // sits beside the next iteration's tensors: the fallback needs room for both. Not a
    // copy whose predecessor this iteration freed (an output kept until the next
    // exists): the next iteration frees it in turn, and its own peak holds both copies
    // as this one's did (an output made at the peak, then declined as it should be,
    // had been allowed 1.25x peak requested).
    std::uint64_t kept_after_peak = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const Request& r = rec.requests[j];
      if (!planned[j] && !plan->freed_next[j] && !copied[j] && r.free_time == kOpen &&
          r.alloc_time >= iteration_peak_time_) {
        kept_after_peak += r.size;
      }
    }
    // Room the fallback had spare at its peak takes them first; past it, whole granules.
    const std::uint64_t spare =
        iteration_peak_reserved_ - std::min(iteration_peak_reserved_, iteration_peak_requested_);
    const std::uint64_t beyond = kept_after_peak - std::min(kept_after_peak, spare);
    plan->fallback_peak_reserved =
        iteration_peak_reserved_ + round_up(beyond, allocator_.granularity(Tier::hbm));
  }
  ++stats_.plans_learned;
  keep_plan(std::move(plan));
}

// Without these hints a first served iteration's take_at found no free block by start
// for one request in six (resnet50_train: 276 of 1,706) and walked the segment's blocks
// from its first, 109 on average, microseconds each time.
void PlannedSource::simulate_first_hits(Plan& plan, const Extents& holes) const {
  const std::vector<Request>& requests = current_.requests;
  plan.first_from.assign(requests.size(), kNoSlot);
  // The arena from empty, by offset; the holes by address.
  std::vector<PlacedRequest> in_arena, in_holes;
  std::vector<std::size_t> arena_index, hole_index;
  for (std::size_t j = 0; j < requests.size(); ++j) {
    const bool arena = plan.offsets[j] != kNoSlot;
    if (!arena && plan.hole_address[j] == 0) continue;
    PlacedRequest placed{arena ? plan.offsets[j] : plan.hole_address[j], requests[j].size,
                         requests[j].alloc_time, std::nullopt};
    if (requests[j].free_time != kOpen) placed.freed = requests[j].free_time;
    (arena ? in_arena : in_holes).push_back(placed);
    (arena ? arena_index : hole_index).push_back(j);
  }
  static_assert(kNoFreeBlock == kNoSlot, "first_from keeps free_block_starts' none");
  const std::vector<std::uint64_t> arena_starts =
      free_block_starts(in_arena, {{0, std::numeric_limits<std::uint64_t>::max()}});
  const std::vector<std::uint64_t> hole_starts =
      free_block_starts(in_holes, {holes.begin(), holes.end()});
  for (std::size_t i = 0; i < arena_index.size(); ++i) {
    plan.first_from[arena_index[i]] = arena_starts[i];
  }
  for (std::size_t i = 0; i < hole_index.size(); ++i) {
    plan.first_from[hole_index[i]] = hole_starts[i];
  }
}

// An MLP's Adam steps, the first iteration marked at the first optimizer step: its plan
// passed the pay test with no room to spare, then the next input took a granule more
// (1.024x against expandable's 1.011x). The step before the mark shows the pattern.
std::vector<bool> PlannedSource::copies_shown_earlier(const std::vector<bool>& planned) const {
  // By size, the times of the frees not yet matched: each shows one request.
  std::unordered_map<std::size_t, std::multiset<std::uint32_t>> frees;
  for (const EarlierFree& f : current_.earlier_frees) frees[f.size].insert(f.time);
  std::vector<bool> copied(current_.requests.size(), false);
  for (std::size_t j = 0; j < current_.requests.size() && !frees.empty(); ++j) {
    const Request& r = current_.requests[j];
    if (planned[j] || r.free_time != kOpen) continue;
    const auto of_size = frees.find(r.size);
    if (of_size == frees.end()) continue;
    const auto outlived = of_size->second.upper_bound(r.alloc_time);
    if (outlived == of_size->second.end()) continue;
    copied[j] = true;
    of_size->second.erase(outlived);
  }
  return copied;
}

// Free space inside the fallback's segments that hold live blocks (weights, optimizer
// state): caching reuses it for activations, so the plan does too, before it sizes the
// arena. Of expandable's free space, only what shares a granule with a lasting block
// stays mapped when the arena is reserved; its range stays open, but what the plan
// keeps out of the arena is kept out of the holes too (take_clear_of_holes). There, a
// block of this iteration that the next frees (a gradient the next zero_grad drops)
// opens its space then: only requests made after that time go there. In rounds, the
// tensors live at the arena's peak go, largest first, to the first hole with room over
// their lifetime; the rounds end when the peak cannot drop. Returns each tensor's
// address in a hole, 0 for the arena.
std::vector<std::uintptr_t> PlannedSource::place_in_holes(
    const std::vector<TensorLifetime>& tensors, const std::vector<std::uint32_t>& made_at,
    const std::vector<std::uint32_t>& freed_in_next, std::uint64_t period, Extents& extents) {
  struct Placed {
    std::uint64_t first_op, last_op;
    std::uintptr_t begin, end;
  };
  // A block's space in a hole that the next iteration frees at `time`.
  struct Opening {
    std::uintptr_t begin, end;
    std::uint32_t time;
  };
  struct Hole {
    std::uintptr_t begin, end;
    std::vector<Opening> openings;  // the rest is free from the start
    std::vector<Placed> placed;
  };
  std::vector<std::uintptr_t> address(tensors.size(), 0);
  std::vector<Hole> holes;
  std::vector<Opening> run_openings;  // of the run of blocks being read
  const auto add_hole = [&](std::uintptr_t begin, std::uintptr_t end) {
    if (end < begin + kMinHole) return;
    Hole hole{begin, end, {}, {}};
    for (const Opening& o : run_openings) {
      if (o.begin < end && begin < o.end) {
        hole.openings.push_back({std::max(o.begin, begin), std::min(o.end, end), o.time});
      }
    }
    holes.push_back(std::move(hole));
  };
  const std::size_t granule = arena_blocks().mapping_granule();
  // When `b`'s space is free for the next iteration's requests: kOpen from its start,
  // else the time the next frees it; nullopt: not in it.
  const auto opens_at = [&](const Block& b) -> std::optional<std::uint32_t> {
    if (!b.allocated) return b.mapped ? std::optional<std::uint32_t>{kOpen} : std::nullopt;
    if (granule == 0 || made_in(b) != current_.iteration) return std::nullopt;
    const std::uint32_t index = request_index(b);
    if (index >= freed_in_next.size() || freed_in_next[index] == kOpen) return std::nullopt;
    return freed_in_next[index];
  };
  for (const Segment* s = arena_blocks().segments(); s != nullptr; s = s->next) {
    if (is_arena(*s) || s->allocated_blocks == 0) continue;
    // A caching segment held only by this iteration's tensors (freed in the next) may go.
    bool lasting = true;
    for (const Block* b = s->first; b != nullptr && lasting && granule == 0; b = b->next) {
      lasting = !b->allocated || made_in(*b) != current_.iteration;
    }
    if (!lasting) continue;
    // Expandable: the granules a block that lasts begins or ends in stay mapped; the
    // rest go back, with those only this iteration's tensors hold.
    const auto granule_of = [&](std::uintptr_t address) {
      return (address - s->granule_base) / granule;
    };
    std::unordered_set<std::uintptr_t> kept_granules;
    for (const Block* b = granule == 0 ? nullptr : s->first; b != nullptr; b = b->next) {
      if (b->allocated && made_in(*b) != current_.iteration) {
        kept_granules.insert(granule_of(b->address));
        kept_granules.insert(granule_of(b->address + b->size - 1));
      }
    }
    const auto add_kept = [&](std::uintptr_t begin, std::uintptr_t end) {
      if (kept_granules.count(granule_of(begin)) != 0) add_hole(begin, end);
    };
    for (const Block* b = s->first; b != nullptr;) {
      if (!opens_at(*b)) {
        b = b->next;
        continue;
      }
      const std::uintptr_t begin = b->address;
      std::uintptr_t end = begin;
      run_openings.clear();
      for (std::optional<std::uint32_t> time; b != nullptr && (time = opens_at(*b)); b = b->next) {
        if (*time != kOpen) run_openings.push_back({b->address, b->address + b->size, *time});
        end = b->address + b->size;
      }
      if (granule == 0) {
        add_hole(begin, end);
        continue;
      }
      const std::uintptr_t head_end = granule_end(*s, begin, granule);
      const std::uintptr_t tail_begin = s->granule_base + granule_of(end) * granule;
      if (head_end >= tail_begin) {
        add_kept(begin, end);
      } else {
        add_kept(begin, head_end);
        add_kept(tail_begin, end);
      }
    }
  }
  if (holes.empty()) return address;
  const auto fit = [&](Hole& hole, std::size_t i) -> std::uintptr_t {
    const TensorLifetime& t = tensors[i];
    std::vector<std::pair<std::uintptr_t, std::uintptr_t>> taken;
    for (const Placed& p : hole.placed) {
      if (p.first_op <= t.last_op && t.first_op <= p.last_op) taken.emplace_back(p.begin, p.end);
    }
    for (const Opening& o : hole.openings) {
      if (made_at[i] <= o.time) taken.emplace_back(o.begin, o.end);  // not free yet
    }
    std::sort(taken.begin(), taken.end());
    std::uintptr_t at = hole.begin;
    for (const auto& [begin, end] : taken) {
      if (begin >= at + t.bytes) break;
      at = std::max(at, end);
    }
    if (at + t.bytes > hole.end) return 0;
    hole.placed.push_back({t.first_op, t.last_op, at, at + t.bytes});
    return at;
  };
  std::vector<std::int64_t> live(period + 1);
  for (int round = 0; round < kHoleRounds; ++round) {
    std::fill(live.begin(), live.end(), 0);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (address[i] != 0) continue;
      live[tensors[i].first_op] += static_cast<std::int64_t>(tensors[i].bytes);
      live[tensors[i].last_op + 1] -= static_cast<std::int64_t>(tensors[i].bytes);
    }
    std::uint64_t peak_op = 0;
    std::int64_t running = 0;
    std::int64_t peak = -1;
    for (std::uint64_t t = 0; t < period; ++t) {
      running += live[t];
      if (running > peak) {
        peak = running;
        peak_op = t;
      }
    }
    std::vector<std::size_t> at_peak;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (address[i] == 0 && tensors[i].first_op <= peak_op && peak_op <= tensors[i].last_op) {
        at_peak.push_back(i);
      }
    }
    std::sort(at_peak.begin(), at_peak.end(),
              [&](std::size_t a, std::size_t b) { return tensors[a].bytes > tensors[b].bytes; });
    bool moved = false;
    for (std::size_t i : at_peak) {
      for (Hole& hole : holes) {
        if (const std::uintptr_t at = fit(hole, i); at != 0) {
          address[i] = at;
          moved = true;
          break;
        }
      }
    }
    if (!moved) break;
  }
  for (const Hole& hole : holes) extents.emplace_back(hole.begin, hole.end);
  return address;
}

namespace {

// Whether [begin, begin + size) misses every one of `ranges` (sorted, disjoint).
bool clear_of(const std::vector<std::pair<std::uintptr_t, std::uintptr_t>>& ranges,
              std::uintptr_t begin, std::size_t size) {
  // The first range that ends past `begin` must start at or after its end.
  const auto next = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                     [](std::uintptr_t a, const auto& r) { return a < r.second; });
  return next == ranges.end() || next->first >= begin + size;
}

}  // namespace

bool PlannedSource::clear_of_plans_holes(std::uintptr_t begin, std::size_t size) const {
  return std::all_of(plans_.begin(), plans_.end(),
                     [&](const auto& plan) { return clear_of(plan->hole_ranges, begin, size); });
}

std::uintptr_t PlannedSource::plans_holes_end() const {
  std::uintptr_t end = 0;
  for (const auto& plan : plans_) {
    if (!plan->hole_ranges.empty()) end = std::max(end, plan->hole_ranges.back().second);
  }
  return end;
}

template <typename Clear>
std::pair<Block*, std::uintptr_t> PlannedSource::find_anywhere_clear(std::size_t size,
                                                                     Clear&& clear) const {
  std::uintptr_t at = 0;
  Block* free = arena_blocks().find_free(size, [&](const Block& candidate) {
    for (const std::uintptr_t start :
         {candidate.address, candidate.address + candidate.size - size}) {
      if (clear(start)) {
        at = start;
        return true;
      }
    }
    return false;
  });
  return {free, at};
}

template <typename Clear>
Block* PlannedSource::take_anywhere_clear(std::size_t size, Clear&& clear) {
  const auto [free, at] = find_anywhere_clear(size, clear);
  if (free == nullptr) return nullptr;
  std::uintptr_t from = free->address;
  return arena_blocks().take_at(*free->segment, at, size, &from);
}

std::optional<PlannedSource::PastTheHoles> PlannedSource::past_the_holes(std::size_t size) const {
  Segment* last = nullptr;
  for (Segment* s = arena_blocks().segments(); s != nullptr; s = s->next) {
    if (last == nullptr || s->address > last->address) last = s;
  }
  Block* end = last == nullptr ? nullptr : last->first;
  while (end != nullptr && end->next != nullptr) end = end->next;
  if (end == nullptr || end->mapped) return std::nullopt;
  const Block* free = end->prev != nullptr && !end->prev->allocated ? end->prev : nullptr;
  const std::uintptr_t start = free != nullptr ? free->address : end->address;
  const std::uintptr_t at =
      std::max(start, round_up(plans_holes_end(), std::uintptr_t{allocator_.config.granule}));
  const std::size_t grow = at + size > end->address ? at + size - end->address : 0;
  return PastTheHoles{last, end, start, at, grow};
}

std::optional<std::uint64_t> PlannedSource::growth_past_the_holes_once_released(
    std::size_t size) const {
  const std::optional<PastTheHoles> place = past_the_holes(size);
  if (!place) return std::nullopt;
  // The free blocks before the unmapped end, mapped or not, join it but for the
  // granule the first of them begins in, which it shares with a block that lives.
  const Block* first_free = place->end;
  while (first_free->prev != nullptr && !first_free->prev->allocated) first_free = first_free->prev;
  const std::size_t granule = arena_blocks().mapping_granule();
  const std::uintptr_t mapped_end = first_free->mapped
                                        ? granule_end(*place->last, first_free->address, granule)
                                        : first_free->address;
  const std::uintptr_t at = std::max(
      first_free->address, round_up(plans_holes_end(), std::uintptr_t{allocator_.config.granule}));
  const std::uintptr_t arena_end = at + size;
  return round_up(arena_end - std::min(arena_end, mapped_end), granule);
}

// At the range's unmapped end, from the holes' end on (over the free block before it,
// if any), its granules mapped as `size` needs: growth elsewhere could map the granules
// of a hole, which the arena must not cover. A walk of the range's last segment, only
// when no free block clear of the holes holds the arena.
Block* PlannedSource::take_past_the_holes(std::size_t size) {
  const std::optional<PastTheHoles> place = past_the_holes(size);
  if (!place) return nullptr;
  BlockPool& blocks = arena_blocks();
  if (place->grow != 0 &&
      expandable_->grow_into(default_pool(), blocks, *place->end, place->grow) != GrowResult::ok) {
    return nullptr;
  }
  std::uintptr_t from = place->start;
  return blocks.take_at(*place->last, place->at, size, &from);
}

Block* PlannedSource::take_clear_of_holes(std::uint32_t index, std::size_t size) {
  const auto clear_of_holes = [&](std::uintptr_t begin) {
    return clear_of(served_->hole_ranges, begin, size);
  };
  // Right after a block that lasts: the granule it begins in stays mapped anyway.
  const auto clear = [&](const Block& free) {
    return free.prev != nullptr && lasts(*free.prev) && clear_of_holes(free.address);
  };
  // Where it went before (by any of the ways below) holds it while clear of the holes.
  const auto kept_clear = [&](const Block& free) { return clear_of_holes(free.address); };
  if (Block* kept = take_where_kept(index, size, kept_clear)) return kept;
  BlockPool& blocks = arena_blocks();
  if (Block* free = blocks.find_free(size, clear)) {
    return blocks.take_at(*free->segment, free->address, size);
  }
  // Else such a block grown into the unmapped space after it, the largest: it needs
  // fewer new granules than a place of its own when it holds more than those would
  // leave free.
  const std::size_t granule = blocks.mapping_granule();
  const std::size_t spare = round_up(size, granule) - size;
  Block* best = nullptr;
  blocks.find_free(granule - spare, [&](Block& free) {
    const bool fits = free.size < size && free.next != nullptr && !free.next->mapped &&
                      free.next->size >= round_up(size - free.size, granule);
    if (fits && clear(free) && (best == nullptr || free.size > best->size)) best = &free;
    return false;  // visit them all: only blocks past most of a granule qualify
  });
  if (best != nullptr) {
    Segment& segment = *best->segment;
    const std::uintptr_t address = best->address;
    const GrowResult grown = expandable_->grow_after(default_pool(), blocks, *best, size);
    return grown == GrowResult::ok ? blocks.take_at(segment, address, size) : nullptr;
  }
  // Else free space clear of the holes anywhere, at a free block's start or end: the
  // small kind's range would map a granule of its own, mapped while the block lives (a
  // GAN's generator output kept from one optimizer step to the next: 1.154x the peak
  // requested, expandable 1.090x).
  return take_anywhere_clear(size, clear_of_holes);
}

// vit_b_16_infer's input and output, 2 of its 101 requests an iteration, found their
// place by best fit over the fallback's free blocks, in holes or not: its 1% latency tail
// (p99 1.5x the static strategy's with holes).
template <typename Accept>
Block* PlannedSource::take_where_kept(std::uint32_t index, std::size_t size, Accept&& accept) {
  BlockPool& blocks = arena_blocks();
  for (const std::uintptr_t address : {served_->kept_at[index], served_->kept_before[index]}) {
    Block* free = address == 0 ? nullptr : blocks.free_block_starting_at(address);
    if (free != nullptr && free->size >= size && accept(*free)) {
      return blocks.take_at(*free->segment, address, size);
    }
  }
  return nullptr;
}

// The expandable flow took the first block of its pool kind, at times the room the
// other copy's partner needed next (vit_b_16_infer repeated: from its second served
// iteration on, the 2.3 MiB output went past the arena, a granule more, as the 16 KiB
// one before it split its room).
Block* PlannedSource::take_smallest_free(std::size_t size) {
  BlockPool& blocks = arena_blocks();
  Block* free = blocks.find_free(size, [](const Block&) { return true; });
  return free == nullptr ? nullptr : blocks.take_at(*free->segment, free->address, size);
}

bool PlannedSource::lasts(const Block& block) const {
  const std::uint64_t iteration = made_in(block);
  return block.allocated && iteration != current_.iteration &&
         !(iteration == previous_.iteration && awaited(request_index(block)));
}

// Not the arena: a hole that an arena carved since covers is not the plan's to take.
Segment* PlannedSource::segment_at(std::uintptr_t address) const {
  for (Segment* s = arena_blocks().segments(); s != nullptr; s = s->next) {
    if (is_arena(*s)) continue;
    if (address >= s->address && address < s->address + s->size) return s;
  }
  return nullptr;
}

void PlannedSource::close_fallback_segments(bool closed) {
  if (expandable_) return;
  BlockPool& blocks = arena_blocks();
  for (Segment* s = blocks.segments(); s != nullptr; s = s->next) {
    if (!is_arena(*s)) blocks.set_closed(*s, closed);
  }
}

// A re-learned plan replaces the one that served; a plan of a known key, or unkeyed of
// a known sequence, replaces its twin; past planned_max_plans the least recently used goes.
namespace {

// Enough to see a cycle of many more shapes than plans kept come round.
constexpr std::size_t kEvictedShapesKept = 1024;

// What tells a plan's shape from another's: its key, else a hash of its sizes.
std::uint64_t shape_id(const std::optional<std::uint64_t>& key,
                       const std::vector<std::size_t>& sizes) {
  if (key) return *key;
  std::uint64_t hash = 0xcbf29ce484222325;  // FNV-1a over the sizes
  for (const std::size_t size : sizes) hash = (hash ^ size) * 0x100000001b3;
  return hash;
}

}  // namespace

void PlannedSource::keep_plan(std::unique_ptr<Plan> plan) {
  for (auto& kept : plans_) {
    const bool twin = plan->key ? kept->key == plan->key : !kept->key && kept->sizes == plan->sizes;
    if (kept.get() == served_ || twin) {
      plan->shape_served = kept->shape_served || kept->iterations_served != 0;
      plan->served_before =
          kept->served_before + kept->iterations_served - kept->iterations_abandoned;
      plan->left_before = kept->left_before + kept->iterations_left;
      plan->last_miss = kept->last_miss;  // why it was learned again
      // A plan replaced before it served (learned again from an iteration no plan
      // served) passes on its count untested.
      plan->missed_relearns = kept->missed                   ? kept->missed_relearns + 1
                              : kept->iterations_served == 0 ? kept->missed_relearns
                                                             : 0;
      // Learned again from an iteration the plan served, of the same sizes: the
      // fallback's peak for them still bounds the arena (a checkpointed MLP's second
      // plan, with no bound, served 2 granules above expandable: 1.025x vs 1.008x).
      if (plan->fallback_peak_reserved == 0 && kept->sizes == plan->sizes) {
        plan->fallback_peak_reserved = kept->fallback_peak_reserved;
      }
      kept = std::move(plan);
      return;
    }
  }
  if (std::find(evicted_shapes_.begin(), evicted_shapes_.end(), shape_id(plan->key, plan->sizes)) !=
      evicted_shapes_.end()) {
    ++stats_.plans_relearned_after_eviction;
  }
  plans_.push_back(std::move(plan));
  if (plans_.size() > allocator_.config.planned_max_plans) {
    const auto oldest =
        std::min_element(plans_.begin(), plans_.end(),
                         [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    evicted_shapes_.push_back(shape_id((*oldest)->key, (*oldest)->sizes));
    if (evicted_shapes_.size() > kEvictedShapesKept) evicted_shapes_.pop_front();
    plans_.erase(oldest);
    ++stats_.plans_evicted;
  }
}

void PlannedSource::release_fallback_cache() {
  const ArenaCalls counted(*this);
  allocator_.flush_recycled();
  PoolState& pool = default_pool();
  for (Tier tier : kAllTiers) {
    for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
      BlockPool& blocks = pool.block_pool(tier, kind);
      if (expandable_) {
        expandable_->release(pool, blocks);
      } else {
        caching_.release_except(pool, blocks, [&](const Segment& s) { return is_arena(s); });
      }
    }
  }
}

// Only while nothing lives in the arena, unless it was carved out of the expandable
// range: that one joins the range again, its live blocks and free granules with it
// (released with the range's).
std::size_t PlannedSource::release_arena() {
  const ArenaCalls counted(*this);
  std::size_t released = 0;
  if (arena_->carved) {
    joined_at_ = arena_->address;
    BlockPool& blocks = arena_blocks();
    blocks.set_closed(*arena_, false);  // as the range is
    arena_->carved = false;
    Segment* range = arena_;
    if (carved_before_ != nullptr) {
      count_carved(*arena_, -1);
      blocks.join_segments(*carved_before_, *arena_);
      range = carved_before_;
    }
    if (carved_after_ != nullptr) {
      count_carved(*carved_after_, -1);
      blocks.join_segments(*range, *carved_after_);
    }
    carved_before_ = carved_after_ = nullptr;
  } else {
    released = caching_.release_except(default_pool(), arena_blocks(),
                                       [&](const Segment& s) { return !is_arena(s); });
  }
  arena_ = nullptr;
  return released;
}

void PlannedSource::count_carved(const Segment& piece, std::int64_t count) {
  allocator_.add_segments(default_pool(), piece.tier, piece.kind, count, piece.size);
}

std::uint64_t PlannedSource::arena_size(const Plan& plan) const {
  return expandable_ ? plan.arena_bytes
                     : round_up(plan.arena_bytes, allocator_.granularity(Tier::hbm));
}

// In the range: where a fallback request of its size would go (granules mapped as for
// one), then split off as a segment of its own, which the range's statistics count.
// Once plans use the range's holes, clear of them all: an arena over another plan's
// hole made that plan miss at every request there.
Segment* PlannedSource::add_arena(std::uint64_t bytes) {
  const ArenaCalls counted(*this);
  PoolState& pool = default_pool();
  BlockPool& blocks = arena_blocks();
  if (!expandable_) {
    return caching_.add_segment(pool, blocks, bytes) == GrowResult::ok ? blocks.segments()
                                                                       : nullptr;
  }
  constexpr std::size_t kAny = ~std::size_t{0};
  const bool holes = plans_holes_end() != 0;
  const auto take_place = [&] {
    return holes ? take_anywhere_clear(
                       bytes, [&](std::uintptr_t at) { return clear_of_plans_holes(at, bytes); })
                 : blocks.take(bytes, kAny, allocator_.config.granule, kAny);
  };
  Block* place = take_place();
  if (place == nullptr && holes) place = take_past_the_holes(bytes);
  if (place == nullptr) {
    if (expandable_->grow(pool, blocks, bytes) != GrowResult::ok) return nullptr;
    place = take_place();
    if (place == nullptr) return nullptr;
  }
  return carve(place);
}

Segment* PlannedSource::carve(Block* place) {
  BlockPool& blocks = arena_blocks();
  Segment* arena = place->segment;
  if (place->prev != nullptr) {
    carved_before_ = arena;
    arena = blocks.split_segment(*arena, place);
  }
  if (place->next != nullptr) carved_after_ = blocks.split_segment(*arena, place->next);
  arena->carved = true;
  if (carved_before_ != nullptr) count_carved(*arena, 1);
  if (carved_after_ != nullptr) count_carved(*carved_after_, 1);
  blocks.release(place);
  return arena;
}

// An arena that joined the range for the fallback (grow) is carved again where it was
// when that space is free and mapped: the fallback's cache stays, and no granule is
// unmapped only to be mapped again (a tensor three times larger in a third of the
// iterations: 39,321 device calls after the arena, 19,721 now; 12,510 before arenas joined).
bool PlannedSource::carve_where_it_was() {
  if (joined_at_ == 0 || !expandable_ || !clear_of_plans_holes(joined_at_, arena_size(*served_))) {
    return false;
  }
  Segment* range = segment_at(joined_at_);
  Block* place =
      range == nullptr ? nullptr : arena_blocks().take_at(*range, joined_at_, arena_size(*served_));
  if (place == nullptr) return false;
  arena_ = carve(place);
  joined_at_ = 0;
  arena_blocks().set_closed(*arena_, true);
  return true;
}

// Decided at an iteration's first request. A plan serves: one arena replaces the
// fallback's cache (reserved when missing, once the previous iteration's tensors it
// is planned for are gone; resized when nothing lives in it) and is the plans' alone. No plan
// serves (learning, or shapes that do not repeat): the iteration is the fallback's. Caching's
// borrows the arena's free space, so shapes that come back find it (and the learning iteration does
// not reserve beside it); reclaim and empty_cache give it back when nothing lives in it.
// Expandable's packs its granules tighter than the arena's free space would hold a
// shape the plans do not know, so an idle arena goes back instead.
void PlannedSource::prepare_arena() {
  close_fallback_segments(served_ != nullptr);
  if (served_ == nullptr) {
    if (arena_ == nullptr) return;
    if (expandable_ && arena_->allocated_blocks == 0) {
      release_arena();
    } else {
      arena_blocks().set_closed(*arena_, false);
    }
    return;
  }
  // Reserved for this plan, kept for smaller ones (shapes served in turn settle on the
  // largest), given back when larger than any plan that has served needs.
  const std::uint64_t needed = arena_size(*served_);
  std::uint64_t largest = needed;
  for (const auto& plan : plans_) {
    if (plan->iterations_served != 0 || plan->shape_served) {
      largest = std::max(largest, arena_size(*plan));
    }
  }
  if (arena_ != nullptr && arena_->allocated_blocks == 0 &&
      (arena_->size < needed || arena_->size > largest)) {
    release_arena();
  }
  if (arena_ == nullptr && needed != 0) {  // 0: the plans fit in the fallback's holes
    if (carve_where_it_was()) return;
    if (awaited_bytes() == 0 && !proven(*served_) && !arena_might_fit(*served_, needed)) {
      decline_serving_plan();
      return;
    }
    release_fallback_cache();  // the learning iteration's memory, at once
    arena_wanted_ = needed;
    awaiting_ = awaited_bytes();
    return;
  }
  if (arena_ != nullptr) arena_blocks().set_closed(*arena_, true);
}

std::uint64_t PlannedSource::awaited_bytes() const {
  std::vector<bool> live(previous_.requests.size(), false);
  for (std::uint32_t j = 0; j < previous_.requests.size(); ++j) {
    live[j] = previous_.requests[j].free_time == kOpen && awaited(j);
  }
  for (const CarriedFree& c : current_.carried) live[c.index] = false;
  std::uint64_t bytes = 0;
  for (std::uint32_t j = 0; j < live.size(); ++j) {
    if (live[j]) bytes += previous_.requests[j].size;
  }
  return bytes;
}

bool PlannedSource::awaited(std::uint32_t index) const {
  return index < served_->sizes.size() && served_->freed_next[index];
}

// The fallback's free memory goes back first (what the awaited tensors held, too): the
// arena takes its place.
bool PlannedSource::reserve_arena() {
  const std::uint64_t bytes = arena_wanted_;
  arena_wanted_ = 0;
  release_fallback_cache();
  if (!proven(*served_) && !arena_fits(bytes, arena_growth(bytes))) {
    decline_serving_plan();
    return false;
  }
  if (Segment* arena = add_arena(bytes)) {
    arena_ = arena;
    arena_blocks().set_closed(*arena_, true);
    if (!device_calls_at_arena_) device_calls_at_arena_ = device_calls();
  }
  return true;
}

// The pay test compares with the fallback's peak in the iteration the plan was learned
// from, which what lasts outgrows (a cache that grows each iteration). A plan that
// served an iteration whole has paid; an arena given back (empty_cache, reclaim) is
// reserved again for it untested: declined there, the fallback alone went 4 MiB above
// the plan (79.7 MB against 75.5 MB).
bool PlannedSource::proven(const Plan& plan) {
  return plan.iterations_served != 0 && !plan.missed;
}

// No plan has served after all: the steady state has not begun.
void PlannedSource::forget_steady_start() {
  steady_ = false;
  stats_.first_served_iteration = 0;
  stats_.steady_peak_reserved_bytes = 0;
  stats_.steady_peak_requested_bytes = 0;
}

void PlannedSource::decline_serving_plan() {
  served_->declined = true;
  served_ = nullptr;
  declined_iteration_ = true;
  if (stats_.first_served_iteration == current_.iteration) {  // only deferrals so far
    forget_steady_start();
  }
  open_to_fallback();
}

// After the release, free blocks next to unmapped space hold less than a granule each
// (whole free granules are unmapped), so a carved arena maps at least its granules
// less the two its neighbours could hold; a device segment adds all of its bytes.
// Past the plans' holes, with no request before it that could take its first granule,
// what it maps is known; and a plan with holes keeps its copies only next to what lasts.
bool PlannedSource::arena_might_fit(Plan& plan, std::uint64_t bytes) {
  if (!expandable_ || plan.fallback_peak_reserved == 0) return true;
  std::uint64_t releasable = 0;
  PoolState& pool = default_pool();
  for (Tier tier : kAllTiers) {
    for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
      releasable += expandable_->releasable_bytes(pool.block_pool(tier, kind));
    }
  }
  const std::uint64_t granule = expandable_->granule_for(arena_blocks());
  const std::uint64_t granules = round_up(bytes, granule) / granule;
  std::uint64_t least_growth = granules > 2 ? (granules - 2) * granule : 0;
  const std::vector<std::size_t> leading = leading_kept(plan);
  const bool shares_first_granule = std::any_of(leading.begin(), leading.end(),
                                                [&](std::size_t size) { return size >= granule; });
  if (plans_holes_end() != 0 && !shares_first_granule) {
    if (const std::optional<std::uint64_t> growth = growth_past_the_holes_once_released(bytes)) {
      least_growth = *growth;
    }
  }
  const std::uint64_t free = arena_blocks().free_bytes();
  std::uint64_t kept_growth = 0;
  if (plan.hole_ranges.empty()) {
    kept_growth = kept_copy_growth(plan, free - std::min(free, releasable));
  } else {
    std::vector<std::size_t> rooms = rooms_after_lasting_once_released(plan);
    const std::uint64_t room = std::accumulate(rooms.begin(), rooms.end(), std::uint64_t{0});
    kept_growth = std::max(
        kept_copy_growth(plan, room),
        round_up(bytes_beyond(leading, std::move(rooms)), allocator_.granularity(Tier::hbm)));
  }
  const std::uint64_t reserved = reserved_now();
  plan.tested_reserved = reserved - std::min(reserved, releasable) + least_growth + kept_growth;
  return plan.tested_reserved <= plan.fallback_peak_reserved;
}

std::vector<std::size_t> PlannedSource::leading_kept(const Plan& plan) {
  std::vector<std::size_t> sizes;
  for (std::size_t j = 0;
       j < plan.sizes.size() && plan.offsets[j] == kNoSlot && plan.hole_address[j] == 0; ++j) {
    sizes.push_back(plan.sizes[j]);
  }
  return sizes;
}

std::vector<std::size_t> PlannedSource::rooms_after_lasting_once_released(const Plan& plan) const {
  const std::size_t granule = arena_blocks().mapping_granule();
  std::vector<std::size_t> rooms;
  for (const Segment* s = arena_blocks().segments(); s != nullptr; s = s->next) {
    if (is_arena(*s)) continue;
    for (const Block* b = s->first; b != nullptr; b = b->next) {
      if (b->allocated || !b->mapped || b->prev == nullptr || !lasts(*b->prev)) continue;
      const std::size_t kept =
          std::min(b->address + b->size, granule_end(*s, b->address, granule)) - b->address;
      if (kept != 0 && clear_of(plan.hole_ranges, b->address, kept)) rooms.push_back(kept);
    }
  }
  return rooms;
}

std::uint64_t PlannedSource::bytes_beyond(std::vector<std::size_t> sizes,
                                          std::vector<std::size_t> rooms) {
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  std::uint64_t beyond = 0;
  for (const std::size_t size : sizes) {
    const auto room =
        std::find_if(rooms.begin(), rooms.end(), [&](std::size_t space) { return space >= size; });
    if (room == rooms.end()) {
      beyond += size;
    } else {
      *room -= size;
    }
  }
  return beyond;
}

std::uint64_t PlannedSource::arena_growth(std::uint64_t bytes) const {
  if (!expandable_) return bytes;
  // Where add_arena will put it: with holes planned, clear of them, else past them
  // (the growth the range's own placement would need was a granule short there:
  // resnet18 SGD steps reserved 2 MiB past the fallback's peak, 1.024x against 1.011x).
  if (plans_holes_end() != 0) {
    const auto clear = [&](std::uintptr_t at) { return clear_of_plans_holes(at, bytes); };
    if (find_anywhere_clear(bytes, clear).first != nullptr) return 0;
    if (const std::optional<PastTheHoles> place = past_the_holes(bytes)) {
      return round_up(place->grow, arena_blocks().mapping_granule());
    }
  }
  return expandable_->bytes_to_grow(arena_blocks(), bytes);
}

bool PlannedSource::arena_fits(std::uint64_t bytes, std::uint64_t growth) {
  if (served_->fallback_peak_reserved == 0) return true;
  const std::uint64_t reserved = reserved_now();
  // The arena takes the fallback's free space that it does not grow for.
  const std::uint64_t free = arena_blocks().free_bytes();
  const std::uint64_t spare = free - std::min(free, bytes - std::min(bytes, growth));
  served_->tested_reserved = reserved + growth + kept_copy_growth(*served_, spare);
  return served_->tested_reserved <= served_->fallback_peak_reserved;
}

std::uint64_t PlannedSource::kept_copy_growth(const Plan& plan, std::uint64_t free) const {
  const std::uint64_t beyond = plan.kept_copy_bytes - std::min(plan.kept_copy_bytes, free);
  return round_up(beyond, allocator_.granularity(Tier::hbm));
}

std::int64_t PlannedSource::device_calls() const {
  const Stats& s = allocator_.stats_of(default_pool());
  return s.num_device_alloc + s.num_device_free;
}

PlannedSource::ArenaCalls::~ArenaCalls() {
  if (source.device_calls_at_arena_ && before >= *source.device_calls_at_arena_) {
    source.arena_device_calls_ += static_cast<std::uint64_t>(source.device_calls() - before);
  }
}

void PlannedSource::reset_accumulated() {
  for (std::uint64_t* count :
       {&stats_.plans_learned, &stats_.plans_evicted, &stats_.plans_relearned_after_eviction,
        &stats_.hits, &stats_.hit_bytes, &stats_.fallbacks, &stats_.fallback_bytes,
        &stats_.learning, &stats_.learning_bytes, &stats_.declined, &stats_.declined_bytes,
        &iteration_learning_, &iteration_learning_bytes_, &stats_.iterations_not_learned,
        &stats_.lasting, &stats_.lasting_bytes, &stats_.deferred, &stats_.deferred_bytes,
        &arena_device_calls_}) {
    *count = 0;
  }
  // The allocator's device calls restarted from 0 before this.
  if (device_calls_at_arena_) device_calls_at_arena_ = device_calls();
}

void PlannedSource::reset_steady_peaks() {
  if (!steady_) return;
  stats_.steady_peak_reserved_bytes = reserved_now();
  stats_.steady_peak_requested_bytes =
      static_cast<std::uint64_t>(allocator_.requested_bytes_now(default_pool()));
}

PlannedStats PlannedSource::stats() const {
  PlannedStats out = stats_;
  out.iterations = current_.iteration;
  out.granule_bytes = allocator_.granularity(Tier::hbm);
  out.max_plans = allocator_.config.planned_max_plans;
  out.arena_device_calls = arena_device_calls_;
  if (device_calls_at_arena_) {
    out.device_calls_after_arena =
        static_cast<std::uint64_t>(device_calls() - *device_calls_at_arena_);
  }
  out.arena_bytes = arena_ == nullptr ? 0 : arena_->size;
  for (const auto& plan : plans_) {
    // The iteration it serves now counts too: a report read mid-iteration, or at the end
    // of a trace, would otherwise say a plan that served every request served nothing.
    const bool serving = plan.get() == served_;
    // Abandoned now, and not yet counted as left (iteration_boundary will).
    const bool abandoned_now =
        serving && left_ &&
        std::find(left_plans_.begin(), left_plans_.end(), plan.get()) == left_plans_.end();
    const std::uint64_t served = plan->served_before + plan->iterations_served -
                                 plan->iterations_abandoned + (serving && !left_ ? 1 : 0);
    const std::uint64_t left = plan->left_before + plan->iterations_left + (abandoned_now ? 1 : 0);
    const auto in_holes = static_cast<std::uint64_t>(
        std::count_if(plan->hole_address.begin(), plan->hole_address.end(),
                      [](std::uintptr_t address) { return address != 0; }));
    out.plans.push_back({plan->sizes.size(), plan->planned_requests, plan->arena_bytes,
                         plan->lower_bound_bytes, served, plan->key, plan->fallback_peak_reserved,
                         plan->declined, left, in_holes, plan->declined_for_misses, plan->last_miss,
                         plan->declined && !plan->declined_for_misses ? plan->tested_reserved : 0});
  }
  return out;
}

}  // namespace npumem::core
