// The allocator's state behind the public facade (pimpl): pools, live blocks,
// statistics and the tier flow HBM -> DDR -> reclaim -> OutOfMemory. The strategy
// (a SegmentSource) decides how memory comes from the device and goes back.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/oom_report.h"
#include "core/pool/align.h"
#include "core/pool/object_pool.h"
#include "core/pool/pointer_map.h"
#include "core/pool/pool_state.h"
#include "core/strategy/planned_source.h"
#include "core/strategy/segment_source.h"
#include "core/stream_order.h"
#include "core/threads/biased_lock.h"
#include "core/threads/solo_counts.h"
#include "core/threads/thread_cache_registry.h"
#include "npumem/allocator.h"

namespace npumem {

struct Allocator::Impl {
  Impl(std::shared_ptr<Device> device, Config config, std::shared_ptr<const ArenaPlanner> planner);
  ~Impl();

  // The allocator's lock: its own spin lock, then every front cache's, so the holder
  // sees and may change everything; taking it folds the caches' counters (a lone
  // thread's: solo_counts) into the statistics, which are then exact, and gives a lone
  // thread's large block kept apart back to its pool, so the holder sees the pools
  // (inactive splits, free segments) as they would be without it.
  class ExclusiveLock {
   public:
    explicit ExclusiveLock(Impl& impl) : impl_(impl) {}
    void lock() {
      lock_leaving_counts(core::thread_cache(impl_.caches->id));
      if (impl_.solo.load(std::memory_order_relaxed)) {
        impl_.fold_solo_counts();
        if (!impl_.caches->caches.empty())
          impl_.give_back_apart(impl_.caches->caches.front().get());
      }
    }
    // The lock without folding solo_counts, for allocate and deallocate: what they
    // count goes there too (account_block). `cache`: the calling thread's.
    [[gnu::always_inline]] void lock_leaving_counts(const core::ThreadCache* cache) {
      impl_.own_lock.lock_as(cache);
      if (!impl_.solo.load(std::memory_order_relaxed)) lock_caches();
    }
    // The lock for a thread already holding its cache's lock (no waiting while it
    // does: others take the allocator's lock first); false when it is taken.
    bool try_lock_holding(core::ThreadCache& held);
    [[gnu::always_inline]] void unlock() {
      if (!impl_.solo.load(std::memory_order_relaxed)) unlock_caches();
      impl_.own_lock.unlock();
    }
    // std::lock_guard with adopt_lock for allocate and deallocate, whose destructor GCC
    // kept out of line (3% of a lone thread's mixed-size pairs).
    class Adopted {
     public:
      explicit Adopted(ExclusiveLock& lock) : lock_(lock) {}
      Adopted(const Adopted&) = delete;
      Adopted& operator=(const Adopted&) = delete;
      [[gnu::always_inline]] ~Adopted() { lock_.unlock(); }

     private:
      ExclusiveLock& lock_;
    };

   private:
    void lock_caches();
    void unlock_caches();
    Impl& impl_;
  };

  // The public operations (the facade holds the lock where these do not). allocate
  // and deallocate first try the calling thread's front cache under its lock alone
  // (not once reuse is ordered by stream: stream_order.h).
  void* allocate(std::size_t bytes, StreamId stream = 0);
  void deallocate(void* ptr);
  void record_stream(void* ptr, StreamId stream);
  bool resize(void* ptr, std::size_t bytes);
  // Throws InvalidPointer; with an operation's name, saying what the pointer is (inside a
  // block, freed, foreign) as invalid_pointer does.
  const core::Block& live_block(const void* ptr, std::string_view operation = {}) const;
  double copy(void* dst, const void* src, std::size_t bytes);
  std::size_t empty_cache();
  std::vector<SegmentInfo> snapshot() const;
  std::uint64_t largest_free_block(Tier tier) const;
  double fragmentation(Tier tier) const;
  core::PoolState& create_pool(const std::string& name, std::uint64_t quota_bytes,
                               std::optional<Tier> tier = std::nullopt);
  core::PoolState* find_pool(const std::string& name) const;
  std::size_t remove_pool(const std::string& name);
  // Statistics as users see them: the allocator's (nullptr) or one pool's.
  Stats public_stats(const core::PoolState* pool) const;
  std::vector<PoolInfo> pool_infos() const;  // with the lock held
  // Caps the HBM limit at `fraction` of the tier's capacity (ConfigError outside [0, 1]).
  void set_memory_fraction(double fraction);
  double memory_fraction = 1.0;  // of HBM's capacity this allocator may reserve
  // The calling thread's pool scope (PoolScope): which allocator, which pool.
  static void set_scope(const Impl* owner, core::PoolState* pool);
  static const Impl* scope_owner();
  static core::PoolState* scope_pool();

  // For the strategies: limits, accounting and events. Called with the lock held.
  std::uint64_t limit(Tier tier) const { return tier_limit[static_cast<int>(tier)]; }
  std::size_t granularity(Tier tier) const { return tier_granularity[static_cast<int>(tier)]; }
  // The block a request of `bytes` takes: whole granules, at least one.
  std::size_t block_size(std::size_t bytes) const {
    return core::round_up_pow2(std::max<std::size_t>(bytes, 1), config.granule);
  }
  core::GrowResult admit(const core::PoolState& pool, Tier tier, std::size_t bytes) const;
  // The reserved bytes the last growth a quota refused would have brought its pool to
  // (what the quota must be for it), for the OOM report.
  mutable std::uint64_t quota_needed_bytes = 0;
  // The most bytes admit() lets `pool` reserve on `tier` now: the tier's limit and the
  // pool's quota, less what each holds.
  std::uint64_t growth_room(const core::PoolState& pool, Tier tier) const;
  // Whether `tier` could hold `bytes` more allocated bytes were all its free memory
  // theirs: a growth that fails this is refused before it creates anything.
  bool tier_could_hold(Tier tier, std::size_t bytes);
  bool would_raise_high_water(Tier tier, std::size_t bytes) const;
  void add_reserved(core::PoolState& pool, Tier tier, PoolKind kind, std::int64_t bytes);
  // `count` segments of `segment_bytes` each made (> 0) or released (< 0).
  void add_segments(core::PoolState& pool, Tier tier, PoolKind kind, std::int64_t count,
                    std::size_t segment_bytes);
  void count_device_call(core::PoolState& pool, bool allocation);
  std::size_t release_cached(core::PoolState& pool, Tier tier);
  // release_cached on the way to serving a request of `size` bytes (under pressure):
  // counted in num_reclaims and reported to observers when anything was released.
  std::size_t reclaim(core::PoolState& pool, Tier tier, std::size_t size);
  // A reclaim made room the request needed (num_alloc_retries, as PyTorch counts them).
  void count_alloc_retry(core::PoolState& pool);
  // Returns the front caches' kept blocks to their block pools (coalescing them).
  void flush_recycled() const;
  bool any_cached() const;
  // Whether a front cache may keep the block: oversize blocks go back to the pools, so
  // the fast paths, which count no oversize allocations, never serve one.
  bool cacheable(const core::Block& block) const { return block.size < config.max_split_size; }
  // Takes back all front-cache credit (peaks were reset: there is no slack left).
  void drop_credit();
  void notify(EventKind kind, std::uint64_t address, std::uint64_t bytes, std::uint64_t requested,
              Tier tier, const core::PoolState& pool, std::uint32_t tag = 0) const;

  std::shared_ptr<Device> device;
  Config config;
  mutable ExclusiveLock mutex{*this};
  // While several threads allocate, the records of the blocks each front cache's thread
  // takes from the pools, in memory of that thread's own (by cache): interleaved with
  // another thread's records, which it writes on every call, they slowed both threads
  // (docs/DESIGN.md, "Several threads"). Before pools: their blocks may hold these
  // records until the pools are gone.
  std::unordered_map<const core::ThreadCache*, std::unique_ptr<core::ObjectPool<core::Block>>>
      thread_records;
  Stats stats;               // before pools: their block pools count into it until destroyed
  Stats peaks_before_reset;  // the peaks reset_peak_stats() lowered (stats_since_start)
  std::vector<std::unique_ptr<core::PoolState>> pools;  // pools[0] is "default"
  // Live blocks and the blocks front caches keep (a cached block stays here, so its
  // reuse touches no table). Changed under the lock only; front caches read it.
  mutable core::PointerMap live;
  std::vector<std::shared_ptr<AllocatorObserver>> observers;
  // Adds or removes an observer (with the lock held).
  void add_observer(std::shared_ptr<AllocatorObserver> observer);
  void remove_observer(const std::shared_ptr<AllocatorObserver>& observer);
  std::vector<std::string> warnings;
  // Per-pool block statistics start when the first named pool is created.
  bool per_pool_stats = false;
  // The source when the strategy is planned (its hooks in allocate, deallocate and
  // at iteration marks); nullptr otherwise.
  core::PlannedSource* planned = nullptr;

  // `pool`'s statistics: the totals while it is the only pool.
  const Stats& stats_of(const core::PoolState& pool) const {
    return per_pool_stats ? pool.stats : stats;
  }
  // The requested bytes in `pool` now, solo_counts' share counted in (the planned
  // strategy's hooks read it while counting apart).
  std::int64_t requested_bytes_now(const core::PoolState& pool) const {
    const bool solo_here = !per_pool_stats || solo_counts.pool() == &pool;
    return stats_of(pool).requested_bytes.all.current +
           (solo_here ? solo_counts.requested_net() : 0);
  }

 private:
  struct Refusal {
    bool quota = false;
    bool arena = false;
    bool address_space = false;
  };

  core::PoolState& current_pool();
  // Past this a request fails before its size is rounded (rounding would overflow).
  static constexpr std::size_t kLargestRequest = std::numeric_limits<std::size_t>::max() / 2;
  // allocate and deallocate past a lone thread's way (out of line: see allocate).
  [[gnu::noinline]] void* allocate_rest(std::size_t bytes, StreamId stream,
                                        core::ThreadCache* cache, bool held);
  [[gnu::noinline]] void deallocate_rest(std::uintptr_t address, core::Block* block,
                                         core::ThreadCache* cache, bool held);
  // With the lock held; `known`: the calling thread's cache when the caller has it.
  void* allocate_locked(std::size_t bytes, StreamId stream, core::ThreadCache* known);
  void deallocate_locked(std::uintptr_t address, core::Block* block, core::ThreadCache* known);
  // While serving_apart(), with the lock held: a block of `cache` (the calling
  // thread's) for the request, counted apart; nullptr when allocate_locked must serve it.
  // kMayFold false (allocate's way): nullptr also when solo_counts would need a fold.
  template <bool kMayFold>
  core::Block* take_solo(std::size_t bytes, StreamId stream, core::ThreadCache* cache);
  // While solo, with the lock held: keeps `block` (what `live` holds for the freed
  // address) in `cache`, the calling thread's; false when deallocate_locked must free
  // it (or report the free invalid).
  // kMayFold false (deallocate's way): false also when solo_counts would need a fold, or
  // any block is shared by streams.
  template <bool kMayFold>
  bool keep_solo(core::Block* block, core::ThreadCache* cache);
  // Whether allocations and frees count in solo_counts now: solo, and no observer to
  // tell of each event. Flags (count_apart_now, serve_apart_now), asked several times on
  // every lone-thread operation.
  bool counting_apart() const { return count_apart_now; }
  // Whether, counting apart, allocations and frees may also skip allocate_locked and
  // deallocate_locked for the front cache (take_solo, keep_solo): not under the planned
  // strategy, whose hooks there see every request in order.
  bool serving_apart() const { return serve_apart_now; }
  void update_counting_apart() {
    count_apart_now = solo.load(std::memory_order_relaxed) && observers.empty();
    serve_apart_now = count_apart_now && planned == nullptr;
  }
  // The calling thread's front cache (`known` when given), made (or a retired one
  // taken over) if it has none.
  core::ThreadCache* attach_cache(core::ThreadCache* known = nullptr) {
    return known != nullptr ? known : attach_new_cache();
  }
  core::ThreadCache* attach_new_cache();
  static void retire_cache(Impl& impl, core::ThreadCache& cache);
  void fold_counters(core::ThreadCache& cache);
  void drop_cached(core::Block* block) const;
  // A lone thread's large block kept apart goes back to its pool before the locked path
  // touches the pools (ThreadCache::LargeBlocks::one_apart).
  void give_back_apart(core::ThreadCache* cache) const {
    if (cache != nullptr && cache->keep_large == core::ThreadCache::LargeBlocks::one_apart) {
      cache->give_back_fits(PoolKind::large, 0, [this](core::Block* kept) { drop_cached(kept); });
    }
  }
  void hold_free_blocks();
  core::Block* reuse_held(core::PoolState& pool, std::size_t size, StreamId stream);
  core::Block* allocate_block(core::PoolState& pool, std::size_t size, PoolKind kind,
                              Refusal& refusal);
  // `block`, just taken from the pools for `cache`'s thread, with its record moved into
  // that thread's thread_records while several threads allocate (not under the planned
  // strategy, whose blocks stay where its plans found them).
  core::Block* own_record(core::Block* block, const core::ThreadCache* cache);
  // Inline, with the rest apart (grow_and_take): most allocations the tier's free
  // blocks serve, and that path then saves the big frame of growth and reclaim.
  core::Block* allocate_on_tier(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind,
                                Refusal& refusal) {
    if (core::Block* block = take_cached(pool, tier, size, kind)) return block;
    return grow_and_take(pool, tier, size, kind, refusal);
  }
  core::Block* grow_and_take(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind,
                             Refusal& refusal);
  core::GrowResult grow(core::PoolState& pool, Tier tier, PoolKind kind, std::size_t size);
  core::Block* take_cached(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind);
  std::size_t release_cached_everywhere(Tier tier);
  // reclaim in every pool.
  std::size_t reclaim_everywhere(core::PoolState& pool, Tier tier, std::size_t size);
  std::size_t counted_reclaim(core::PoolState& pool, Tier tier, std::size_t size,
                              std::size_t released);
  void account_block(core::PoolState& pool, const core::Block& block, bool allocated);
  void count_block(core::PoolState& pool, const core::Block& block, bool allocated);
  // While counting_apart(): an allocation or free of a block that is not oversize.
  // Inline: out of line, GCC made one function of both branches (measured: 30 more
  // instructions per alloc+free pair of one size).
  [[gnu::always_inline]] void count_apart(const core::Block& block, bool allocated) {
    if (!solo_counts.counts_like(block)) {
      fold_solo_counts();
      solo_counts.start(block);
    }
    if (allocated) {
      solo_counts.allocated(block);
    } else {
      solo_counts.freed(block);
    }
  }
  void fold_solo_counts() {
    if (!solo_counts.empty()) fold_solo_counts_now();
  }
  void fold_solo_counts_now();
  void limit_credit(const core::PoolState& pool, const core::Block& block);
  // Gives the calling thread's cache the slack below the peaks no cache holds, when
  // its fast path ran short of credit.
  void refill_credit(core::ThreadCache& cache, core::PoolState& pool);
  // Per part of front-cache credit, the slack below the peaks of `counter` in `s` that
  // no cache claims (negative: claimed beyond it).
  std::array<std::int64_t, core::ThreadCache::kCredits> unclaimed_slack(const Stats& s,
                                                                        const core::PoolState& pool,
                                                                        int counter) const;
  [[noreturn]] void fail(core::PoolState& pool, std::size_t bytes, std::size_t size,
                         const Refusal& refusal);
  // Throws InvalidPointer for a pointer `operation` ("free", "resize") was given that
  // is no live allocation: freed already, inside a block, or not this allocator's.
  [[noreturn]] void invalid_pointer(std::uintptr_t address, std::string_view operation) const;
  void release_everything();
  void fall_back_from_expandable();
  // Warnings for settings that cannot act (a limit past the capacity, an unused static_size).
  void warn_of_idle_settings();
  // Likewise for a new pool's: a quota past its tiers, a name no trace can hold.
  void warn_of_unusable_pool_settings(const std::string& name, std::uint64_t quota_bytes,
                                      std::optional<Tier> tier);
  core::OomContext oom_context(core::PoolState& pool, std::size_t bytes, std::size_t size,
                               const Refusal& refusal) const;

  std::unique_ptr<core::SegmentSource> source;
  // Changed under the lock, which holds every front cache's: a thread holding its own
  // cache's lock may read it. Mutable: returning kept blocks (flush_recycled, on
  // const reads too) holds them behind events once streams are ordered.
  mutable core::StreamOrder streams;
  // The first half of ExclusiveLock; biased towards the lone cache's thread while solo.
  core::BiasedSpinLock own_lock;
  std::shared_ptr<core::CacheRegistry> caches;
  // At most one front cache so far: its thread's operations take the allocator's lock
  // (the owner's way of own_lock: no atomic exchange) and its allocations and frees
  // count in solo_counts. False for good once a second thread allocates or frees.
  std::atomic<bool> solo{true};
  // What the lone thread's allocations and frees counted since the last fold.
  core::SoloCounts solo_counts;
  bool count_apart_now = false;  // counting_apart(); changed under the lock
  bool serve_apart_now = false;  // serving_apart(); likewise
  Tier cached_tier = Tier::hbm;  // front caches keep the first tier's blocks only
  // The limit the config and the device give a tier (before any memory fraction).
  std::uint64_t configured_limit(Tier tier) const;
  std::array<std::uint64_t, kTierCount> tier_limit{};
  std::array<std::uint64_t, kTierCount> tier_granularity{};
  // Device::has_tier, read once: it takes the device's lock, and every allocation the
  // front cache does not serve asked it (a tenth of expandable's instructions each).
  std::array<bool, kTierCount> tier_present{};
  // Highest reserved bytes per tier ever reached; unlike the peak stat, not reset.
  std::array<std::uint64_t, kTierCount> reserved_high_water{};
};

}  // namespace npumem
