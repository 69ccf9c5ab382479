// The tiered caching allocator: HBM first, then DDR, then reclaim, then an
// OutOfMemory that explains itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "npumem/arena_planner.h"
#include "npumem/config.h"
#include "npumem/device.h"
#include "npumem/observer.h"
#include "npumem/stats.h"

namespace npumem {

namespace core {
struct PoolState;
}

struct BlockInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint64_t requested_bytes = 0;  // 0 for free blocks
  bool allocated = false;
  bool mapped = true;  // false: free address space of an expandable range, no memory
  std::string tag;
};

struct SegmentInfo {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  Tier tier = Tier::hbm;
  PoolKind kind = PoolKind::large;
  std::string pool;
  std::vector<BlockInfo> blocks;  // in address order, covering the segment exactly
};

struct PoolInfo {
  std::string name;
  std::uint64_t quota_bytes = 0;  // 0: no quota
  std::optional<Tier> tier;       // set: the pool is pinned to this tier
  Stats stats;
};

// One plan of the planned strategy.
// The first request of an iteration that a plan did not serve as planned.
struct PlanMiss {
  bool seen = false;
  std::uint64_t request = 0;        // its index in the iteration (0: the first)
  std::uint64_t bytes = 0;          // what it asked, rounded to the block size
  std::uint64_t planned_bytes = 0;  // what the plan has there; 0: past the plan's requests
  // Its size was the plan's, but its planned place was held still: by a tensor not yet
  // freed (an iteration's before it under another plan, whose places differ; the fallback's).
  bool place_taken = false;
};

struct PlanInfo {
  std::uint64_t requests = 0;  // requests of the iteration it was learned from
  // Of those, the ones it places: at an offset in the arena, or (hole_requests) in free
  // space the fallback's segments hold beside what lasts.
  std::uint64_t planned_requests = 0;
  std::uint64_t arena_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;  // no layout of its planned requests is smaller
  // Iterations it served, the one in progress included, and those served by the plans
  // it replaced (learned again for its shape), so the plans' counts add up.
  std::uint64_t iterations_served = 0;
  std::optional<std::uint64_t> key;  // the iteration key it serves (mark_iteration(key))
  // The bound its arena is held to: the reserved peak of the iteration it was learned
  // from, which the fallback served, plus the granules what that iteration kept after
  // its peak (optimizer state made at its end) needs beside the next iteration's tensors;
  // so it may pass the run's own peak. A plan re-learned with the same sizes keeps its
  // predecessor's. 0: none (a plan served that iteration, after a change of shape).
  std::uint64_t fallback_peak_reserved_bytes = 0;
  // Its arena beside what the fallback still held would have reserved more than that
  // peak, or its iterations kept missing it (declined_for_misses): the fallback serves
  // its iterations instead.
  bool declined = false;
  // Iterations that began on it (their first requests matched) and then left it, the
  // rest going to the fallback: not among iterations_served, though they made hits.
  // Those of the plans it replaced count too.
  std::uint64_t iterations_left = 0;
  // Of planned_requests, those in the fallback's free space, not the arena: a plan may
  // place them all there (arena 0 B).
  std::uint64_t hole_requests = 0;
  // Declined not for its arena but because the iterations it served kept differing from
  // it (other sizes, another order), each plan learned again missing in turn.
  bool declined_for_misses = false;
  // Of its last iteration with a miss (a fallback), the first request that missed.
  PlanMiss last_miss;
  // Declined for its arena: the fewest reserved bytes the test found the arena would
  // bring beside what the fallback held (above fallback_peak_reserved_bytes). 0: not so
  // declined.
  std::uint64_t declined_reserved_bytes = 0;
};

// What the planned strategy did (all zero under other strategies). Requests of the
// default pool after the first iteration mark are counted: hits got their planned
// offset; fallbacks came in an iteration a plan served but did not match it (another
// size, an extra request, its range not free); lasting ones the plan keeps out of the
// arena; learning ones came in an iteration no plan served; declined ones in an
// iteration of a declined plan's shape or key, which the fallback serves instead.
struct PlannedStats {
  std::uint64_t plans_learned = 0;  // plans made, re-learning included
  // Plans dropped, the least recently used, to keep at most max_plans (planned_max_plans).
  std::uint64_t plans_evicted = 0;
  // Of plans_learned, those of a shape (sizes, or key) whose plan had been evicted: more
  // shapes recur than max_plans keeps.
  std::uint64_t plans_relearned_after_eviction = 0;
  std::uint64_t max_plans = 0;
  // The arena reserved now: carved out of the expandable fallback's range, its bytes; a
  // device segment of its own, whole granules.
  std::uint64_t arena_bytes = 0;
  std::uint64_t hits = 0;
  // This and every *_bytes count below: each request at its block size (whole granules,
  // config `granule`; a request of 0 bytes takes one), the bytes it takes in the arena or
  // the fallback.
  std::uint64_t hit_bytes = 0;
  std::uint64_t fallbacks = 0;
  std::uint64_t fallback_bytes = 0;
  std::uint64_t learning = 0;
  std::uint64_t learning_bytes = 0;
  std::uint64_t declined = 0;
  std::uint64_t declined_bytes = 0;
  // Iterations no plan served and not learned either: their shape was new after the
  // last few learned ones never served (shapes that do not repeat), so planning them
  // waits for a repeat or a doubling interval.
  std::uint64_t iterations_not_learned = 0;
  // Requests the plan keeps out of the arena (they outlived the learned iteration:
  // weights, optimizer state, a cache), served by the fallback as planned.
  std::uint64_t lasting = 0;
  std::uint64_t lasting_bytes = 0;
  // Requests of a served iteration the fallback took while its new arena waited for the
  // iteration before to free what the arena's space is planned for (a change of plan).
  std::uint64_t deferred = 0;
  std::uint64_t deferred_bytes = 0;
  std::uint64_t iterations = 0;  // iteration marks seen: iteration k began at the k-th
  // The iteration in which a plan first served; 0: none.
  std::uint64_t first_served_iteration = 0;
  // Device calls (creations and releases) since the arena was first reserved: only
  // fallbacks and a re-sized arena need any.
  std::uint64_t device_calls_after_arena = 0;
  // Of those, the calls for arenas as plans change: reserving and releasing them, and the
  // fallback's cache released for one. The rest are the fallback's (misses, learning,
  // iterations of declined plans).
  std::uint64_t arena_device_calls = 0;
  // Reserved and requested peaks since the first iteration a plan served (steady state),
  // or since reset_peak_stats() when that came later.
  std::uint64_t steady_peak_reserved_bytes = 0;
  std::uint64_t steady_peak_requested_bytes = 0;
  // The granule device memory is reserved in (the arena's tier): the steady peak reserved
  // is at least the requested peak rounded up to it. 0: not known.
  std::uint64_t granule_bytes = 0;
  std::vector<PlanInfo> plans;  // the plans kept now

  // Hits over every request counted above (0 when none was): the share plans served.
  double hit_share() const;
  // The steady peaks' ratio, reserved over requested; none before a plan served.
  std::optional<double> steady_overhead_ratio() const;
  // The least steady_overhead_ratio() whole granules allow: the requested peak rounded
  // up to granule_bytes, over that peak; none before a plan served or with no granule.
  std::optional<double> steady_floor_ratio() const;
  // The figures above but the plans under "planned.<name>" keys, beside Stats::as_map()'s.
  std::map<std::string, std::int64_t> as_map() const;
};

class Allocator {
 public:
  // `planner` lays out the planned strategy's iterations; the default is the plan
  // layer's (see arena_planner.h). Other strategies ignore it.
  explicit Allocator(std::shared_ptr<Device> device, Config config = {},
                     std::shared_ptr<const ArenaPlanner> planner = default_arena_planner());
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Returns memory of at least `bytes` (aligned to the granule) from the current
  // thread's pool. Throws OutOfMemory. allocate(0) returns a unique valid pointer.
  void* allocate(std::size_t bytes);
  // The same, for work on `stream`. Once a second stream allocates (on a device with
  // events), reuse is stream-ordered as in PyTorch: a block freed on stream S serves S
  // again at once and other streams only after an event recorded on S at the free has
  // completed (docs/DESIGN.md, "Streams").
  void* allocate(std::size_t bytes, StreamId stream);
  // Throws InvalidPointer for a pointer not live in this allocator (changing nothing).
  void deallocate(void* ptr);
  // PyTorch's record_stream: the live block is also used by `stream`, so when freed it
  // serves no stream, its own included, until events on all its streams completed.
  // Throws InvalidPointer for a pointer that is not live.
  void record_stream(void* ptr, StreamId stream);
  // Grows or shrinks a live allocation in place (growing needs a free neighbour, as
  // aclrtMemReuse); returns false, changing nothing, when it cannot. Throws
  // InvalidPointer for a pointer that is not live.
  bool resize(void* ptr, std::size_t bytes);

  // Copies bytes between two live allocations (the addresses allocate() returned; bytes
  // at most either's requested size) through the device, which moves them when its
  // memory is backed. Returns the transfer time of the device's bandwidth model; the
  // statistics count copies, bytes and modelled time per direction (copy_bytes.hbm_to_ddr,
  // ...). Throws InvalidPointer for an address that is not live, Error when bytes overrun.
  double copy(void* dst, const void* src, std::size_t bytes);

  // Whether ptr is a live allocation of this allocator (never throws).
  bool owns(const void* ptr) const;
  Tier tier_of(const void* ptr) const;                 // throws InvalidPointer
  std::size_t allocation_size(const void* ptr) const;  // requested bytes; throws

  // The statistics, exact when read. The blocks threads' front caches keep go back to
  // their pools first, so the inactive splits are those a snapshot shows and that the
  // pools would hold without caches.
  Stats stats() const;
  // stats() without giving kept blocks back first (their pools' inactive splits leave
  // them out; every other figure is the same): for readers that poll and must not
  // change where later requests land, such as the stats page `npumem smi` reads.
  Stats stats_leaving_caches() const;
  // stats() with each peak the highest since the allocator was made: reset_peak_stats()
  // lowers stats()' peaks, not these (a job's report must not lose the peak its own
  // code reset, as a script that reset them each epoch did).
  Stats stats_since_start() const;
  void reset_peak_stats();
  // Zeroes the accumulated counts (each statistic's allocated and freed, num_ooms,
  // num_device_alloc, ...) of the allocator and its pools; current values and peaks stay.
  void reset_accumulated_stats();
  // Caps the HBM this allocator may reserve at `fraction` of the tier's capacity (within
  // any `hbm` setting), as torch.cuda.set_per_process_memory_fraction: growth past it
  // is refused, so requests spill to DDR or fail with an OutOfMemory naming the
  // fraction. Memory reserved already stays. Throws ConfigError for a fraction outside
  // [0, 1] or a device without HBM.
  void set_memory_fraction(double fraction);
  double memory_fraction() const;  // 1 until set
  // Releases every cached free segment to the device; returns the bytes released.
  std::size_t empty_cache();
  std::vector<SegmentInfo> snapshot() const;
  // Largest free block and fragmentation (1 - largest_free / free_reserved) of a tier.
  std::uint64_t largest_free_block(Tier tier) const;
  double fragmentation(Tier tier) const;

  // Named pools with quotas (0: none). The default pool is "default". A pool pinned to a
  // tier allocates only from it and never spills (OutOfMemory instead); ConfigError when
  // the device lacks the tier.
  void create_pool(const std::string& name, std::uint64_t quota_bytes = 0,
                   std::optional<Tier> tier = std::nullopt);
  // Removes a named pool (a model unloaded from a server): its memory goes back to the
  // device, static arena included, and its name is free for create_pool again, with
  // another quota. Returns the bytes released. ConfigError for the default pool, an
  // unknown pool, one that holds live allocations (their count and bytes named) and
  // one a PoolScope routes to on any thread.
  std::size_t remove_pool(const std::string& name);
  std::vector<PoolInfo> pools() const;  // each pool's stats() as stats() reads them
  // pools() as stats_leaving_caches() reads them (the stats page's).
  std::vector<PoolInfo> pools_leaving_caches() const;

  // Marks the start of an iteration (training step, inference batch): observers see an
  // EventKind::iteration event; the planned strategy learns and serves per iteration.
  // The key says which shape the iteration has (e.g. its batch size or sequence length
  // bucket): the planned strategy keeps a plan per key and serves the iteration by it;
  // without one, the plan is chosen by the iteration's first request sizes.
  void mark_iteration(std::optional<std::uint64_t> key = std::nullopt);
  PlannedStats planned_stats() const;

  void add_observer(std::shared_ptr<AllocatorObserver> observer);
  void remove_observer(const std::shared_ptr<AllocatorObserver>& observer);

  Device& device() const;
  // The settings in effect (the strategy after any fallback).
  const Config& config() const;
  // Problems met that did not stop it: at construction (e.g. a strategy fallback), and
  // a pool's quota that is not whole granules.
  std::vector<std::string> warnings() const;

  struct Impl;

 private:
  friend class PoolScope;
  std::unique_ptr<Impl> impl_;
};

// Routes this thread's allocations to a named pool while in scope
// (like torch.cuda.use_mem_pool). Throws ConfigError for an unknown pool.
class PoolScope {
 public:
  PoolScope(Allocator& allocator, const std::string& pool);
  ~PoolScope();
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;
  // The pool this thread's innermost scope routes to, on whichever allocator; "default"
  // outside every scope. Recordings of a client's allocations write it as `p` lines.
  static std::string current_pool();
  // That pool's quota in bytes (0: none, or outside every scope). Recordings write it
  // on the pool's first `p` line, so that a replay keeps it.
  static std::uint64_t current_pool_quota();

 private:
  const Allocator::Impl* previous_owner_;
  core::PoolState* previous_pool_;
  core::PoolState* pool_ = nullptr;  // counted in its scopes while this lives
};

}  // namespace npumem
