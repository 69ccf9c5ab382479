#include "core/allocator_impl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/memory_tag.h"
#include "core/pool/align.h"
#include "core/strategy/caching_source.h"
#include "core/strategy/expandable_source.h"
#include "core/strategy/static_source.h"
#include "device/os/process_fence.h"
#include "npumem/errors.h"
#include "npumem/units.h"
#include "util/untrusted_text.h"

namespace npumem {

using core::Block;
using core::BlockPool;
using core::GrowResult;
using core::PoolState;
using core::Segment;
using core::ThreadCache;

namespace {

int index(Tier tier) {
  return static_cast<int>(tier);
}

// The statistic a front cache counter stands for (thread_cache.h).
template <typename StatsType>  // Stats or const Stats
auto& split_of(StatsType& stats, int counter) {
  return counter == ThreadCache::allocated_bytes   ? stats.allocated_bytes
         : counter == ThreadCache::requested_bytes ? stats.requested_bytes
                                                   : stats.allocation;
}

// A freed block goes back to its block pool, free to every stream.
void release_to_pool(Block* block) {
  block->segment->pool->block_pool(block->segment->tier, block->segment->kind).release(block);
}

// The pool this thread allocates from, per allocator (PoolScope sets it).
thread_local const Allocator::Impl* scoped_owner = nullptr;
thread_local PoolState* scoped_pool = nullptr;

}  // namespace

Allocator::Impl::Impl(std::shared_ptr<Device> dev, Config conf,
                      std::shared_ptr<const ArenaPlanner> planner)
    : device(std::move(dev)),
      config(conf),
      caches(std::make_shared<core::CacheRegistry>(this, &Impl::retire_cache)) {
  if (!device) throw ConfigError("allocator needs a device");
  // The biased lock's fence registers once per process, 10-20 ms in a process with
  // threads (the kernel waits for a grace period): here, not in the first allocation.
  os::process_fence_available();
  try {
    validate(config);
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("config: ") + error.what());  // built in code: say so
  }
  for (Tier tier : kAllTiers) {
    const TierInfo info = device->tier_info(tier);
    tier_present[index(tier)] = info.present;
    tier_limit[index(tier)] = configured_limit(tier);
    tier_granularity[index(tier)] = std::max<std::uint64_t>(info.granularity_bytes, 1);
    // Less than a granule holds nothing: most likely a size given without its unit
    // (hbm=12 for 12GiB), which sent every request of a replay to DDR without a word.
    if (tier_limit[index(tier)] != 0 && tier_limit[index(tier)] < tier_granularity[index(tier)]) {
      warnings.push_back(
          "tier " + std::string(tier_name(tier)) + " of device " + device->name() + " may hold " +
          format_bytes(tier_limit[index(tier)]) + ", less than its granularity of " +
          format_bytes(tier_granularity[index(tier)]) + ", so nothing is placed there" +
          (tier_limit[index(tier)] < KiB ? " (a size without a unit is in bytes)" : ""));
    }
  }
  cached_tier = tier_limit[index(Tier::hbm)] != 0 ? Tier::hbm : Tier::ddr;
  if (config.strategy == Strategy::expandable && !device->supports_virtual_memory()) {
    fall_back_from_expandable();
  }
  warn_of_idle_settings();
  switch (config.strategy) {
    case Strategy::caching:
      source = std::make_unique<core::CachingSource>(*this);
      break;
    case Strategy::expandable:
      source = std::make_unique<core::ExpandableSource>(*this);
      break;
    case Strategy::static_arena:
      source = std::make_unique<core::StaticSource>(*this);
      break;
    case Strategy::planned: {
      auto planned_source = std::make_unique<core::PlannedSource>(*this, std::move(planner));
      planned = planned_source.get();
      source = std::move(planned_source);
      break;
    }
  }
  update_counting_apart();
  try {
    create_pool("default", 0);
  } catch (...) {
    release_everything();
    throw;
  }
}

void Allocator::Impl::warn_of_idle_settings() {
  for (Tier tier : kAllTiers) {
    const std::uint64_t limit = tier == Tier::hbm ? config.hbm_limit : config.ddr_limit;
    const TierInfo info = device->tier_info(tier);
    if (limit != 0 && !info.present) {
      warnings.push_back(std::string(tier_name(tier)) + ":" + format_bytes(limit) +
                         " is set, but device " + device->name() + " has no " +
                         (tier == Tier::hbm ? "HBM" : "DDR") + ": it is not used");
    }
    if (limit != 0 && info.present && limit > info.capacity_bytes) {
      warnings.push_back(std::string(tier_name(tier)) + ":" + format_bytes(limit) +
                         " is more than the " + (tier == Tier::hbm ? "HBM" : "DDR") +
                         " of device " + device->name() + " (" + format_bytes(info.capacity_bytes) +
                         "): the capacity is the limit");
    }
  }
  // Under expandable, static_size is kept for expandable_fallback on devices without
  // virtual memory: a config shared by several devices sets it.
  if (config.static_size != 0 && config.strategy != Strategy::static_arena &&
      config.strategy != Strategy::expandable) {
    warnings.push_back("static_size:" + format_bytes(config.static_size) +
                       " is set, but strategy:" + std::string(strategy_name(config.strategy)) +
                       " makes no static arena: it is not used");
  }
  // Fallback keys of another strategy (a cold trial set planned_fallback under caching
  // and was told nothing). Planned falls back to expandable, whose own key then counts.
  const std::string strategy = "strategy:" + std::string(strategy_name(config.strategy));
  if (config.planned_fallback != PlannedFallback::automatic &&
      config.strategy != Strategy::planned) {
    warnings.push_back(
        "planned_fallback:" + std::string(planned_fallback_name(config.planned_fallback)) +
        " is set, but " + strategy + " is not planned: it is not used");
  }
  if (config.planned_max_plans != Config{}.planned_max_plans &&
      config.strategy != Strategy::planned) {
    warnings.push_back("planned_max_plans:" + std::to_string(config.planned_max_plans) +
                       " is set, but " + strategy + " is not planned: it is not used");
  }
  if (config.expandable_fallback != ExpandableFallback::automatic &&
      config.strategy != Strategy::expandable && config.strategy != Strategy::planned) {
    warnings.push_back(
        "expandable_fallback:" + std::string(expandable_fallback_name(config.expandable_fallback)) +
        " is set, but " + strategy + " is not expandable: it is not used");
  }
  if (config.static_fallback && config.strategy != Strategy::static_arena &&
      config.strategy != Strategy::expandable) {
    warnings.push_back("static_fallback:true is set, but " + strategy +
                       " makes no static arena: it is not used");
  }
}

// The seeds' NPU: one warning in the seeds' words, then the strategy
// expandable_fallback names (static needs static_size, the arena's size).
void Allocator::Impl::fall_back_from_expandable() {
  const bool to_static =
      config.expandable_fallback == ExpandableFallback::static_arena ||
      (config.expandable_fallback == ExpandableFallback::automatic && config.static_size != 0);
  if (to_static && config.static_size == 0) {
    throw ConfigError(
        "expandable_fallback:static needs static_size:<bytes> (the arena size): "
        "device " +
        device->name() + " has no virtual-memory calls");
  }
  config.strategy = to_static ? Strategy::static_arena : Strategy::caching;
  warnings.push_back("expandable_segments feature is not supported by device " + device->name() +
                     " (no virtual-memory calls); falling back to the " +
                     std::string(strategy_name(config.strategy)) +
                     " strategy (expandable_fallback:" +
                     std::string(expandable_fallback_name(config.expandable_fallback)) + ")");
}

Allocator::Impl::~Impl() {
  {
    std::lock_guard guard(caches->mutex);  // waits out a thread retiring its cache
    caches->owner.store(nullptr);
  }
  flush_recycled();
  streams.drop(*device);
  release_everything();
}

std::uint64_t Allocator::Impl::configured_limit(Tier tier) const {
  const TierInfo info = device->tier_info(tier);
  if (!info.present) return 0;
  const std::uint64_t limit = tier == Tier::hbm ? config.hbm_limit : config.ddr_limit;
  return limit == 0 ? info.capacity_bytes : std::min(limit, info.capacity_bytes);
}

// PyTorch's setMemoryFraction: what is reserved already stays; growth past the new
// limit is refused (and spills to DDR when allowed).
void Allocator::Impl::set_memory_fraction(double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    char given[32];
    // "NaN" whatever its sign bit: %g and to_string wrote 0.0 / 0.0 as "-nan".
    std::snprintf(given, sizeof given, "%g", fraction);
    throw ConfigError("memory fraction must be between 0 and 1, got " +
                      (std::isnan(fraction) ? std::string("NaN") : std::string(given)));
  }
  const TierInfo hbm = device->tier_info(Tier::hbm);
  if (!hbm.present) {
    throw ConfigError("device " + device->name() + " has no HBM to take a memory fraction of");
  }
  memory_fraction = fraction;
  const auto share = static_cast<std::uint64_t>(fraction * static_cast<double>(hbm.capacity_bytes));
  tier_limit[index(Tier::hbm)] = std::min(configured_limit(Tier::hbm), share);
}

// While one cache exists (solo), its thread works under the allocator's own lock
// and the cache locks are not needed.
void Allocator::Impl::ExclusiveLock::lock_caches() {
  for (const auto& cache : impl_.caches->caches) {
    cache->lock.lock();
    impl_.fold_counters(*cache);
  }
}

bool Allocator::Impl::ExclusiveLock::try_lock_holding(ThreadCache& held) {
  if (!impl_.own_lock.try_lock()) return false;
  for (const auto& cache : impl_.caches->caches) {
    if (cache.get() != &held) cache->lock.lock();
    impl_.fold_counters(*cache);
  }
  return true;
}

void Allocator::Impl::ExclusiveLock::unlock_caches() {
  for (const auto& cache : impl_.caches->caches) cache->lock.unlock();
}

// Called with the lock held: every cache is locked (unless solo), a new one too.
ThreadCache* Allocator::Impl::attach_new_cache() {
  if (ThreadCache* cache = core::thread_cache(caches->id)) return cache;
  ThreadCache* cache = nullptr;
  for (const auto& spare : caches->caches) {
    if (spare->retired) {
      cache = spare.get();
      break;
    }
  }
  const bool made = cache == nullptr;
  if (made) {
    cache = caches->caches.emplace_back(std::make_unique<ThreadCache>(cached_tier)).get();
    if (caches->caches.size() == 2) {
      // No longer solo: from now on the lock holds every cache's lock. The first
      // cache's thread works under the allocator's lock while solo, so it is free.
      fold_solo_counts();
      caches->caches.front()->lock.lock();
      caches->caches.front()->keep_large = ThreadCache::LargeBlocks::all;
      solo.store(false, std::memory_order_relaxed);
      own_lock.set_owner(nullptr);
      update_counting_apart();
    }
    if (!solo.load(std::memory_order_relaxed)) {
      cache->lock.lock();
      cache->keep_large = ThreadCache::LargeBlocks::all;
    } else {
      // The first cache: its thread took the lock as any other (it had no cache).
      own_lock.set_owner(cache);
      if (config.strategy == Strategy::caching || config.strategy == Strategy::static_arena) {
        cache->keep_large = ThreadCache::LargeBlocks::one_apart;
      }
    }
  }
  if (!core::adopt_thread_cache(caches, cache)) {
    if (made) cache->retired = true;
    return nullptr;
  }
  cache->retired = false;
  return cache;
}

void Allocator::Impl::retire_cache(Impl& impl, ThreadCache& cache) {
  std::lock_guard lock(impl.mutex);
  cache.flush([&](Block* block) { impl.drop_cached(block); });
  cache.retired = true;
}

// A cache's counters become the allocator's (and its pool's) statistics. No peak moves:
// the cache served allocations only on credit, so its thread's changes never took a
// statistic past its peak. (Raising peaks here, kind by kind, made the all and tier
// splits pass through sums they never held: a large block freed, then small ones taken
// on its credit, read as the small ones first.)
void Allocator::Impl::fold_counters(ThreadCache& cache) {
  PoolState* pool = cache.pool();
  if (pool == nullptr) return;
  Stats* pool_stats = per_pool_stats ? &pool->stats : nullptr;
  cache.fold([&](int counter, int kind, std::int64_t added, std::int64_t removed) {
    for (Stats* s : {&stats, pool_stats}) {
      if (s == nullptr) continue;
      StatSplit& splits = split_of(*s, counter);
      for (Stat* stat : {&splits.all, &splits.by_kind[static_cast<std::size_t>(kind)],
                         &splits.by_tier[static_cast<std::size_t>(cached_tier)]}) {
        stat->current += added - removed;
        stat->allocated += added;
        stat->freed += removed;
      }
    }
  });
}

void Allocator::Impl::fold_solo_counts_now() {
  solo_counts.fold_into(stats);
  if (per_pool_stats) solo_counts.fold_into(solo_counts.pool()->stats);
  solo_counts.clear();
}

// Per part of front-cache credit (thread_cache.h), the slack below the peaks of one
// statistic that no cache claims: the common part against the all and kept-tier
// splits, each kind's part against its kind's split. Negative: claimed beyond it.
std::array<std::int64_t, ThreadCache::kCredits> Allocator::Impl::unclaimed_slack(
    const Stats& s, const PoolState& pool, int counter) const {
  const StatSplit& splits = split_of(s, counter);
  const auto slack = [](const Stat& stat) { return stat.peak - stat.current; };
  std::array<std::int64_t, ThreadCache::kCredits> unclaimed = {
      std::min(slack(splits.all), slack(splits.by_tier[static_cast<std::size_t>(cached_tier)])),
      slack(splits.by_kind[0]), slack(splits.by_kind[1])};
  for (const auto& cache : caches->caches) {
    if (&s != &stats && cache->pool() != &pool) continue;  // a pool's stats: its caches only
    for (int part = 0; part < ThreadCache::kCredits; ++part) {
      unclaimed[part] -= cache->credit(counter, static_cast<ThreadCache::Credit>(part));
    }
  }
  return unclaimed;
}

// After an allocation under the lock: takes back front-cache credit wherever the
// current value plus all credit would pass the peak (thread_cache.h), so no
// allocation a cache serves alone can pass it. The calling thread's own credit goes
// first: it is in the slow path already, while taking another's would send that
// thread there too.
void Allocator::Impl::limit_credit(const PoolState& pool, const Block& block) {
  if (solo.load(std::memory_order_relaxed)) return;  // no fast path, no credit
  ThreadCache* self = core::thread_cache(caches->id);
  if (self != nullptr && (!per_pool_stats || self->pool() == &pool) &&
      self->give_up_credit(block)) {
    return;
  }
  if (std::none_of(caches->caches.begin(), caches->caches.end(),
                   [](const auto& cache) { return cache->has_credit(); })) {
    return;
  }
  for (const Stats* s :
       {static_cast<const Stats*>(&stats), per_pool_stats ? &pool.stats : nullptr}) {
    if (s == nullptr) continue;
    for (int counter = 0; counter < ThreadCache::kCounters; ++counter) {
      const auto unclaimed = unclaimed_slack(*s, pool, counter);
      for (int part = 0; part < ThreadCache::kCredits; ++part) {
        std::int64_t excess = -unclaimed[part];
        const auto take_back = [&](ThreadCache& cache) {
          if (excess > 0 && (s == &stats || cache.pool() == &pool)) {
            excess -= cache.revoke(counter, static_cast<ThreadCache::Credit>(part), excess);
          }
        };
        if (self != nullptr) take_back(*self);
        for (const auto& cache : caches->caches) take_back(*cache);
      }
    }
  }
}

void Allocator::Impl::refill_credit(ThreadCache& cache, PoolState& pool) {
  if (!cache.counts_for(&pool)) return;  // its credit is another pool's until it frees here
  for (int counter = 0; counter < ThreadCache::kCounters; ++counter) {
    auto grants = unclaimed_slack(stats, pool, counter);
    if (per_pool_stats) {
      const auto in_pool = unclaimed_slack(pool.stats, pool, counter);
      for (int part = 0; part < ThreadCache::kCredits; ++part) {
        grants[part] = std::min(grants[part], in_pool[part]);
      }
    }
    for (int part = 0; part < ThreadCache::kCredits; ++part) {
      if (grants[part] > 0) {
        cache.grant(&pool, counter, static_cast<ThreadCache::Credit>(part), grants[part]);
      }
    }
  }
}

void Allocator::Impl::drop_credit() {
  for (const auto& cache : caches->caches) cache->drop_credit();
}

// Once streams are ordered, a kept block goes behind an event on its stream, recorded
// now (later than its free, so its work is covered), like any freed block.
void Allocator::Impl::drop_cached(Block* block) const {
  live.erase(block->address);
  block->owner = nullptr;
  if (!streams.hold(*device, block)) release_to_pool(block);
}

void Allocator::Impl::add_observer(std::shared_ptr<AllocatorObserver> observer) {
  observers.push_back(std::move(observer));
  update_counting_apart();
}

void Allocator::Impl::remove_observer(const std::shared_ptr<AllocatorObserver>& observer) {
  std::erase(observers, observer);
  update_counting_apart();
}

void Allocator::Impl::release_everything() {
  for (auto& pool : pools) {
    for (Tier tier : kAllTiers) {
      for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
        source->release_all(*pool, pool->block_pool(tier, kind));
      }
    }
  }
}

void Allocator::Impl::warn_of_unusable_pool_settings(const std::string& name,
                                                     std::uint64_t quota_bytes,
                                                     std::optional<Tier> tier) {
  // A quota past every tier the pool may use never binds: a unit's typo (1EiB for 1GiB)
  // read as accepted.
  std::uint64_t holdable = 0;
  std::string tiers;
  for (Tier t : kAllTiers) {
    const bool used = tier ? t == *tier : t == Tier::hbm || config.spill_to_ddr;
    if (!device->has_tier(t) || !used) continue;
    holdable += limit(t);
    tiers += (tiers.empty() ? "" : ", ") + std::string(tier_name(t)) + " " + format_bytes(limit(t));
  }
  if (quota_bytes > holdable && holdable != 0) {
    warnings.push_back("pool '" + name + "': a quota of " + format_bytes(quota_bytes) +
                       " is more than its tiers may hold on device " + device->name() + " (" +
                       format_bytes(holdable) + ": " + tiers +
                       "), so it never stops the pool; the tiers' limits do");
  }
  if (planned != nullptr && !pools.empty()) {  // a named pool: the default one comes first
    // One pool per model plus strategy:planned looked planned, and its figures (0
    // fallbacks) suggested so, while the pool ran as the fallback alone.
    warnings.push_back("pool '" + name +
                       "': strategy:planned plans the default pool only; this pool's "
                       "requests are served by its fallback (" +
                       planned->fallback_name() + ") and are not in the planned.* figures");
  }
  if (name.find(' ') != std::string::npos) {  // other blanks are control characters, refused
    std::string word = name;
    std::replace(word.begin(), word.end(), ' ', '_');
    warnings.push_back("pool '" + name +
                       "': a name with blanks cannot be written in a trace (npumem.torch capture "
                       "and traces name a pool in one field); one word, e.g. " +
                       word + ", can");
  }
}

PoolState& Allocator::Impl::create_pool(const std::string& name, std::uint64_t quota_bytes,
                                        std::optional<Tier> tier) {
  if (tier && !device->has_tier(*tier)) {
    throw ConfigError("pool '" + name + "' cannot be pinned to " + std::string(tier_name(*tier)) +
                      ": device " + device->name() + " has no " + std::string(tier_name(*tier)) +
                      " tier");
  }
  if (tier == Tier::ddr && config.strategy == Strategy::static_arena) {
    throw ConfigError("pool '" + name +
                      "' cannot be pinned to ddr under the static strategy, whose arenas are "
                      "in HBM; use strategy caching or expandable");
  }
  // Memory comes in whole granules: a quota below the least of them holds nothing, and
  // its first request read as "the quota is spent" with nothing allocated.
  std::size_t least_granule = std::numeric_limits<std::size_t>::max();
  for (Tier t : kAllTiers) {
    if (device->has_tier(t) && (!tier || t == *tier)) {
      least_granule = std::min(least_granule, granularity(t));
    }
  }
  if (quota_bytes != 0 && quota_bytes < least_granule) {
    throw ConfigError("pool '" + name + "': a quota of " + format_bytes(quota_bytes) +
                      " holds nothing on device " + device->name() +
                      ", whose memory comes in granules of " + format_bytes(least_granule));
  }
  // Accepted (a quota is often given in MB), but said: a 5 MiB quota held 4 MiB, its
  // out-of-memory message the only trace of why.
  if (quota_bytes % least_granule != 0) {
    warnings.push_back(
        "pool '" + name + "': a quota of " + format_bytes(quota_bytes) + " (" +
        std::to_string(quota_bytes) + " bytes) is not a whole number of granules of " +
        format_bytes(least_granule) + "; memory comes in whole granules, so " +
        "the pool holds at most " + format_bytes(quota_bytes / least_granule * least_granule));
  }
  warn_of_unusable_pool_settings(name, quota_bytes, tier);
  if (!pools.empty() && !per_pool_stats) {
    // Until now every allocation was the default pool's: its stats are the totals.
    pools.front()->stats = stats;
    pools.front()->own_stats = true;
    per_pool_stats = true;
  }
  pools.push_back(std::make_unique<PoolState>(name, quota_bytes, &stats, tier));
  pools.back()->own_stats = per_pool_stats;
  try {
    source->pool_created(*pools.back());
  } catch (...) {
    source->release_all(*pools.back(), pools.back()->block_pool(Tier::hbm, PoolKind::large));
    pools.pop_back();
    throw;
  }
  return *pools.back();
}

// Kept blocks and blocks waiting on streams go back first, so that what the pool holds
// is either live (refused) or free to release.
std::size_t Allocator::Impl::remove_pool(const std::string& name) {
  std::lock_guard lock(mutex);
  PoolState* pool = find_pool(name);
  const std::string shown = "'" + util::escaped_for_display(name) + "'";
  if (pool == nullptr) throw ConfigError("unknown pool " + shown + "; nothing to remove");
  if (pool == pools.front().get()) throw ConfigError("the default pool cannot be removed");
  if (pool->scopes.load() != 0) {
    throw ConfigError("pool " + shown + " is in use: a pool scope routes allocations to it; " +
                      "remove it after the scope ends");
  }
  flush_recycled();
  if (streams.holds_any()) streams.wait_and_settle(*device, release_to_pool);
  fold_solo_counts();
  const Stat& live = pool->stats.allocation.all;
  if (live.current != 0) {
    throw ConfigError(
        "pool " + shown + " holds " +
        format_count(static_cast<std::uint64_t>(live.current), "live allocation") + " (" +
        format_bytes(static_cast<std::uint64_t>(pool->stats.allocated_bytes.all.current)) +
        "); free them before removing it");
  }
  for (const auto& cache : caches->caches) {
    if (cache->pool() == pool) cache->drop_credit();  // its counters were folded at lock
  }
  std::size_t released = 0;
  for (Tier tier : kAllTiers) {
    for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
      released += source->release_removed(*pool, pool->block_pool(tier, kind));
    }
  }
  std::erase_if(pools, [&](const auto& kept) { return kept.get() == pool; });
  return released;
}

inline PoolState& Allocator::Impl::current_pool() {
  return scoped_owner == this && scoped_pool != nullptr ? *scoped_pool : *pools.front();
}

PoolState* Allocator::Impl::find_pool(const std::string& name) const {
  for (const auto& pool : pools) {
    if (pool->name == name) return pool.get();
  }
  return nullptr;
}

// A lone thread's way first: the allocator's lock taken the owner's way (no locked
// instruction), and a block its front cache kept (take_solo). It calls nothing but
// allocate_rest, last: the search for the thread's cache and a fold of solo_counts are
// left to that (callgrind, a lone thread's pairs of one size: 359 instructions a pair
// with them here and the counts out of line, 281 now; mixed sizes 383, 307).
void* Allocator::Impl::allocate(std::size_t bytes, StreamId stream) {
  ThreadCache* cache = core::last_thread_cache(caches->id);
  // Held the owner's way, solo holds until the lock is let go (only its holder ends it).
  const bool held = solo.load(std::memory_order_relaxed) && own_lock.try_enter_as_owner(cache);
  if (held) {
    if (const Block* block = take_solo<false>(bytes, stream, cache)) {
      own_lock.leave_as_owner();
      return reinterpret_cast<void*>(block->address);
    }
    own_lock.adopt_as_owner();
  }
  return allocate_rest(bytes, stream, cache, held);
}

// Every other way. While several threads allocate, a block this thread freed, of
// exactly this size and pool, under the thread's cache lock alone; no table is touched
// (the block stayed in `live`). Only while reuse is not ordered by stream, for the one
// stream seen so far. `held`: the lock is held already (allocate's way).
void* Allocator::Impl::allocate_rest(std::size_t bytes, StreamId stream, ThreadCache* cache,
                                     bool held) {
  if (cache == nullptr) cache = core::thread_cache(caches->id);
  bool locked = held;
  // The planned strategy counts every request in order, so it always takes the lock.
  if (!locked && !solo.load(std::memory_order_relaxed) && cache != nullptr && planned == nullptr &&
      bytes <= kLargestRequest) {
    cache->lock.lock();
    // A kept block is its stream's to take back at once (it never met another stream);
    // a stream not seen yet finds none and goes the locked way, which notes it.
    if (observers.empty()) {
      const std::size_t size = block_size(bytes);
      if (Block* block = cache->take_counted(size, &current_pool(), stream, bytes)) {
        block->requested = bytes;
        block->tag = core::current_tag_id();
        cache->lock.unlock();
        return reinterpret_cast<void*>(block->address);
      }
    }
    // A miss: when the allocator's lock is free, take it without letting go of ours.
    locked = mutex.try_lock_holding(*cache);
    if (!locked) cache->lock.unlock();
  }
  // solo: the cache is used under this lock alone, and kept blocks count apart.
  if (!locked) mutex.lock_leaving_counts(cache);
  // One call site, so backtraces taken below are the same whichever way came here.
  const ExclusiveLock::Adopted lock(mutex);
  if (const Block* block = take_solo<true>(bytes, stream, cache)) {
    return reinterpret_cast<void*>(block->address);
  }
  return allocate_locked(bytes, stream, cache);
}

// Inline in allocate, apart from allocate_locked's frame: a lone thread's churn of
// one size takes this path on nearly every allocation. A kept block's stream was
// noted when the block was first allocated, so there is none to note here.
template <bool kMayFold>
[[gnu::always_inline]] inline Block* Allocator::Impl::take_solo(std::size_t bytes, StreamId stream,
                                                                ThreadCache* cache) {
  if (cache == nullptr || !serving_apart() || bytes > kLargestRequest) {
    return nullptr;
  }
  const std::size_t size = block_size(bytes);
  PoolState& pool = current_pool();
  if (!kMayFold && !solo_counts.counts_like(&pool, cached_tier)) return nullptr;
  Block* block = cache->take(size, &pool, stream);  // still in `live`
  if (block == nullptr) return nullptr;
  block->requested = bytes;
  block->tag = core::current_tag_id();
  if (kMayFold) {
    count_apart(*block, true);
  } else {
    solo_counts.allocated(*block);
  }
  return block;
}

// With the lock held.
void* Allocator::Impl::allocate_locked(std::size_t bytes, StreamId stream, ThreadCache* known) {
  ThreadCache* cache = attach_cache(known);
  give_back_apart(cache);
  PoolState& pool = current_pool();
  if (bytes > kLargestRequest) fail(pool, bytes, bytes, {});
  const std::size_t size = block_size(bytes);
  if (streams.note(*device, stream)) hold_free_blocks();
  Block* block = planned != nullptr ? planned->take(pool, size) : nullptr;
  if (block != nullptr) {
    live.insert(block->address, block);
    block->owner = cache;
  } else if (cache != nullptr && !serving_apart()) {  // else take_solo found none
    block = cache->take(size, &pool, stream);         // still in `live`
  }
  if (block == nullptr) {
    // A miss: this thread's kept blocks that best fit could use (as large as the
    // request, or beside free space) go back first, so it sees the free space it would
    // without a cache. Kept whole, they left other sizes to split fresh space, and
    // small pools reserved more than PyTorch's policy (a decoder's token-by-token
    // inference 1.188 vs 1.018, an LSTM's training 1.341 vs 1.006; equal now).
    if (cache != nullptr && !cache->empty()) {
      cache->give_back_fits(source->kind_for(size), size,
                            [this](Block* kept) { drop_cached(kept); });
    }
    block = reuse_held(pool, size, stream);
    if (block == nullptr) {
      Refusal refusal;
      block = allocate_block(pool, size, source->kind_for(size), refusal);
      if (block == nullptr && streams.holds_any()) {
        // As PyTorch does before giving up: wait for the work the held blocks wait for.
        streams.wait_and_settle(*device, release_to_pool);
        block = allocate_block(pool, size, source->kind_for(size), refusal);
      }
      if (block == nullptr) fail(pool, bytes, size, refusal);
      block = own_record(block, cache);
    }
    live.insert(block->address, block);
    block->owner = cache;
  }
  block->requested = bytes;
  block->tag = core::current_tag_id();
  block->stream = stream;
  account_block(pool, *block, true);
  if (cache != nullptr && cache->take_starved()) refill_credit(*cache, pool);
  if (planned != nullptr) planned->allocated(*block);
  if (!observers.empty()) {
    notify(EventKind::alloc, block->address, block->size, bytes, block->segment->tier, pool,
           block->tag);
  }
  return reinterpret_cast<void*>(block->address);
}

// Ordering starts: a second stream allocates. Blocks the first stream freed until now
// recorded no event, and its kernels may still use them, so every free block waits
// behind an event on that stream (its own stream may still take them back at once).
// Front caches go on serving each stream what it freed itself; a block leaving a cache
// goes behind an event then (drop_cached).
void Allocator::Impl::hold_free_blocks() {
  flush_recycled();
  for (const auto& pool : pools) {
    for (Tier tier : kAllTiers) {
      for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
        BlockPool& blocks = pool->block_pool(tier, kind);
        while (const Block* largest = blocks.largest_free_block()) {
          Block* block = blocks.take(largest->size, largest->size, config.granule, 0);
          block->stream = streams.first_stream();
          if (!streams.hold(*device, block)) {
            blocks.release(block);  // no event to wait for: as without ordering
            return;
          }
        }
      }
    }
  }
}

// The held blocks whose events have completed go back to their pools first, where they
// coalesce and the usual best fit serves from them, as without a second stream (taking
// back a held block unsplit first, a stream-0 workload reserved 2.4x more once another
// stream had made one allocation); then a block this stream freed whose events still
// run (stream_order.h).
Block* Allocator::Impl::reuse_held(PoolState& pool, std::size_t size, StreamId stream) {
  if (!streams.holds_any()) return nullptr;
  streams.settle(*device, release_to_pool);
  return streams.reuse(*device, stream, size, &pool);
}

// HBM first; DDR when spilling is allowed. Each tier tries its cache, then growth,
// then a reclaim of cached free memory before the next tier is considered, so a
// tensor lands in slow memory only when fast memory truly cannot hold it. A pinned
// pool uses its tier only: placement there is the caller's decision, not a spill.
Block* Allocator::Impl::allocate_block(PoolState& pool, std::size_t size, PoolKind kind,
                                       Refusal& refusal) {
  if (pool.pinned_tier) return allocate_on_tier(pool, *pool.pinned_tier, size, kind, refusal);
  for (Tier tier : kAllTiers) {
    if (tier == Tier::ddr && !config.spill_to_ddr) break;
    // A limit of 0 from a memory fraction of 0 still leaves what is reserved to serve.
    if (!tier_present[index(tier)]) continue;
    Block* block = allocate_on_tier(pool, tier, size, kind, refusal);
    if (block == nullptr) continue;
    // A spill: HBM was there to try (a memory fraction of 0 leaves none to this
    // process, and its requests spill all the same); not on a device or setting
    // without HBM.
    if (tier == Tier::ddr && configured_limit(Tier::hbm) != 0) {
      ++stats.num_spills;
      ++pool.stats.num_spills;
      if (!observers.empty()) {
        notify(EventKind::spill, block->address, size, size, tier, pool, core::current_tag_id());
      }
    }
    return block;
  }
  return nullptr;
}

// The tier's free blocks had no fit.
Block* Allocator::Impl::grow_and_take(PoolState& pool, Tier tier, std::size_t size, PoolKind kind,
                                      Refusal& refusal) {
  if (any_cached()) {
    flush_recycled();
    if (Block* block = take_cached(pool, tier, size, kind)) return block;
  }
  // More than the tier or the quota may ever hold: no release could make room, so none
  // is made (the cache stays, and the device calls to fill it again are saved).
  if (size > tier_limit[index(tier)]) return nullptr;
  if (pool.quota_bytes != 0 && size > pool.quota_bytes) {
    refusal.quota = true;
    return nullptr;
  }
  GrowResult grown = grow(pool, tier, kind, size);
  if (grown != GrowResult::ok) {
    // A quota only frees by releasing the pool's own cache; anything else by every pool's.
    const std::size_t released = grown == GrowResult::quota_refused
                                     ? reclaim(pool, tier, size)
                                     : reclaim_everywhere(pool, tier, size);
    if (released != 0) {
      count_alloc_retry(pool);
      grown = grow(pool, tier, kind, size);
    }
  }
  if (grown != GrowResult::ok) {
    refusal.quota = refusal.quota || grown == GrowResult::quota_refused;
    refusal.arena = refusal.arena || grown == GrowResult::arena_exhausted;
    refusal.address_space = refusal.address_space || grown == GrowResult::address_space_refused;
    return nullptr;
  }
  if (Block* block = take_cached(pool, tier, size, kind)) return block;
  // The segment just made for the request serves it even when max_split_size keeps
  // cached blocks of its size from requests this small (a 62 MiB request in its new
  // 64 MiB segment under max_split_size:64MiB), as PyTorch's does; split as PyTorch
  // splits: only for a request below max_split_size.
  return pool.block_pool(tier, kind)
      .take(size, std::numeric_limits<std::size_t>::max(), config.granule,
            size < config.max_split_size ? std::numeric_limits<std::size_t>::max() : 0);
}

GrowResult Allocator::Impl::grow(PoolState& pool, Tier tier, PoolKind kind, std::size_t size) {
  const double threshold = config.garbage_collection_threshold;
  const auto reserved = static_cast<double>(stats.reserved_bytes.by_tier[index(tier)].current);
  // PyTorch's garbage_collection_threshold: above this share of the limit, give back
  // cached memory before taking more.
  if (threshold > 0 && reserved + static_cast<double>(size) >
                           threshold * static_cast<double>(tier_limit[index(tier)])) {
    reclaim(pool, tier, size);
  }
  return source->grow(pool, pool.block_pool(tier, kind), size);
}

Block* Allocator::Impl::take_cached(PoolState& pool, Tier tier, std::size_t size, PoolKind kind) {
  BlockPool& blocks = pool.block_pool(tier, kind);
  // max_split_size is for segments made per request. An expandable range is one segment
  // whose free mapped blocks merge into blocks past any such size (a 257 B request
  // found none it could take beside 4 GiB free), and split anyway, as PyTorch's
  // expandable segments do; the static arena is one segment made to be split.
  const bool per_request_segments =
      blocks.mapping_granule() == 0 && config.strategy != Strategy::static_arena;
  const std::size_t max_split =
      per_request_segments ? config.max_split_size : std::numeric_limits<std::size_t>::max();
  std::size_t max_block = std::numeric_limits<std::size_t>::max();
  if (max_split != std::numeric_limits<std::uint64_t>::max()) {
    // PyTorch's rule: big cached blocks serve only requests of about their size.
    max_block = size < max_split ? max_split - 1 : size + config.large_segment;
  }
  return blocks.take(size, max_block, config.granule, max_split);
}

GrowResult Allocator::Impl::admit(const PoolState& pool, Tier tier, std::size_t bytes) const {
  const auto reserved =
      static_cast<std::uint64_t>(stats.reserved_bytes.by_tier[index(tier)].current);
  if (reserved + bytes > tier_limit[index(tier)]) return GrowResult::limit_refused;
  if (pool.quota_bytes != 0 && pool.reserved_bytes() + bytes > pool.quota_bytes) {
    quota_needed_bytes = pool.reserved_bytes() + bytes;
    return GrowResult::quota_refused;
  }
  return GrowResult::ok;
}

std::uint64_t Allocator::Impl::growth_room(const PoolState& pool, Tier tier) const {
  const auto reserved =
      static_cast<std::uint64_t>(stats.reserved_bytes.by_tier[index(tier)].current);
  std::uint64_t room = tier_limit[index(tier)] - std::min(tier_limit[index(tier)], reserved);
  if (pool.quota_bytes != 0) {
    room = std::min(room, pool.quota_bytes - std::min(pool.quota_bytes, pool.reserved_bytes()));
  }
  return room;
}

bool Allocator::Impl::tier_could_hold(Tier tier, std::size_t bytes) {
  fold_solo_counts();
  const auto allocated =
      static_cast<std::uint64_t>(stats.allocated_bytes.by_tier[index(tier)].current);
  return allocated + bytes <= tier_limit[index(tier)];
}

void Allocator::Impl::count_alloc_retry(PoolState& pool) {
  ++stats.num_alloc_retries;
  ++pool.stats.num_alloc_retries;
}

bool Allocator::Impl::would_raise_high_water(Tier tier, std::size_t bytes) const {
  const auto reserved =
      static_cast<std::uint64_t>(stats.reserved_bytes.by_tier[index(tier)].current);
  return reserved + bytes > reserved_high_water[index(tier)];
}

void Allocator::Impl::add_reserved(PoolState& pool, Tier tier, PoolKind kind, std::int64_t bytes) {
  for (Stats* s : {&stats, &pool.stats}) {
    if (bytes >= 0) {
      s->reserved_bytes.increase(kind, tier, bytes);
    } else {
      s->reserved_bytes.decrease(kind, tier, -bytes);
    }
  }
  reserved_high_water[index(tier)] = std::max<std::uint64_t>(
      reserved_high_water[index(tier)],
      static_cast<std::uint64_t>(stats.reserved_bytes.by_tier[index(tier)].current));
}

void Allocator::Impl::add_segments(PoolState& pool, Tier tier, PoolKind kind, std::int64_t count,
                                   std::size_t segment_bytes) {
  const bool oversize = segment_bytes >= config.max_split_size;
  for (Stats* s : {&stats, &pool.stats}) {
    if (count >= 0) {
      s->segment.increase(kind, tier, count);
      if (oversize) s->oversize_segments.increase(count);
    } else {
      s->segment.decrease(kind, tier, -count);
      if (oversize) s->oversize_segments.decrease(-count);
    }
  }
}

void Allocator::Impl::count_device_call(PoolState& pool, bool allocation) {
  for (Stats* s : {&stats, &pool.stats}) {
    ++(allocation ? s->num_device_alloc : s->num_device_free);
  }
}

void Allocator::Impl::flush_recycled() const {
  for (const auto& cache : caches->caches) {
    cache->flush([this](Block* block) { drop_cached(block); });
  }
}

bool Allocator::Impl::any_cached() const {
  return std::any_of(caches->caches.begin(), caches->caches.end(),
                     [](const auto& cache) { return !cache->empty(); });
}

std::size_t Allocator::Impl::release_cached(PoolState& pool, Tier tier) {
  flush_recycled();
  std::size_t released = 0;
  for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
    released += source->release(pool, pool.block_pool(tier, kind));
  }
  return released;
}

std::size_t Allocator::Impl::release_cached_everywhere(Tier tier) {
  std::size_t released = 0;
  for (auto& pool : pools) released += release_cached(*pool, tier);
  return released;
}

std::size_t Allocator::Impl::reclaim(PoolState& pool, Tier tier, std::size_t size) {
  return counted_reclaim(pool, tier, size, release_cached(pool, tier));
}

std::size_t Allocator::Impl::reclaim_everywhere(PoolState& pool, Tier tier, std::size_t size) {
  return counted_reclaim(pool, tier, size, release_cached_everywhere(tier));
}

std::size_t Allocator::Impl::counted_reclaim(PoolState& pool, Tier tier, std::size_t size,
                                             std::size_t released) {
  if (released != 0) {
    ++stats.num_reclaims;
    ++pool.stats.num_reclaims;
    notify(EventKind::reclaim, 0, released, size, tier, pool);
  }
  return released;
}

// Only allocated, requested and allocation counts are kept on the hot path; active
// ones equal them (held blocks count as freed) and are filled in by public_stats().
// A pool's own stats are kept once named pools exist. A lone thread's allocations
// and frees count apart until read (solo_counts), but for oversize ones, which
// count in oversize_allocations too.
void Allocator::Impl::account_block(PoolState& pool, const Block& block, bool allocated) {
  if (counting_apart() && block.size < config.max_split_size) {
    count_apart(block, allocated);
    return;
  }
  fold_solo_counts();
  if (allocated) {
    count_block(pool, block, true);
    limit_credit(pool, block);
  } else {
    count_block(pool, block, false);
  }
}

void Allocator::Impl::count_block(PoolState& pool, const Block& block, bool allocated) {
  const Tier tier = block.segment->tier;
  const PoolKind kind = block.segment->kind;
  const auto size = static_cast<std::int64_t>(block.size);
  const auto requested = static_cast<std::int64_t>(block.requested);
  const bool oversize = block.size >= config.max_split_size;
  for (Stats* s : {&stats, per_pool_stats ? &pool.stats : nullptr}) {
    if (s == nullptr) continue;
    if (allocated) {
      s->allocated_bytes.increase(kind, tier, size);
      s->requested_bytes.increase(kind, tier, requested);
      s->allocation.increase(kind, tier, 1);
      if (oversize) s->oversize_allocations.increase(1);
    } else {
      s->allocated_bytes.decrease(kind, tier, size);
      s->requested_bytes.decrease(kind, tier, requested);
      s->allocation.decrease(kind, tier, 1);
      if (oversize) s->oversize_allocations.decrease(1);
    }
  }
}

Stats Allocator::Impl::public_stats(const PoolState* pool) const {
  Stats out = pool == nullptr || !per_pool_stats ? stats : pool->stats;
  out.active_bytes = out.allocated_bytes;
  out.active = out.allocation;
  if (config.max_split_size != std::numeric_limits<std::uint64_t>::max()) {
    out.max_split_size = static_cast<std::int64_t>(config.max_split_size);
  }
  return out;
}

std::vector<PoolInfo> Allocator::Impl::pool_infos() const {
  std::vector<PoolInfo> infos;
  for (const auto& pool : pools)
    infos.push_back({pool->name, pool->quota_bytes, pool->pinned_tier, public_stats(pool.get())});
  return infos;
}

// A lone thread's way first, as in allocate: the block goes back to its front cache
// (keep_solo).
void Allocator::Impl::deallocate(void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  ThreadCache* cache = core::last_thread_cache(caches->id);
  const bool held = solo.load(std::memory_order_relaxed) && own_lock.try_enter_as_owner(cache);
  Block* block = nullptr;
  if (held) {
    block = live.find(address);
    if (keep_solo<false>(block, cache)) {
      own_lock.leave_as_owner();
      return;
    }
    own_lock.adopt_as_owner();
  }
  deallocate_rest(address, block, cache, held);
}

// Every other way. While several threads free, a live block this thread's cache owns
// goes back to that cache, under its lock alone. `live` is only read here; it changes
// under the allocator's lock, which holds this cache's lock too. `held`: the lock is
// held already, and `block` is what `live` holds for the address.
void Allocator::Impl::deallocate_rest(std::uintptr_t address, Block* block, ThreadCache* cache,
                                      bool held) {
  if (cache == nullptr) cache = core::thread_cache(caches->id);
  bool locked = held;
  if (!locked && !solo.load(std::memory_order_relaxed) && cache != nullptr && planned == nullptr) {
    cache->lock.lock();
    block = live.find(address);
    if (block != nullptr && block->owner == cache && !block->cached && observers.empty() &&
        !streams.shared(block) && cache->counts_for(block->segment->pool) && cacheable(*block) &&
        cache->keep(block)) {
      cache->count_free(*block);
      cache->lock.unlock();
      return;
    }
    // The lookup holds while this cache's lock does: `live` changes only under both.
    locked = mutex.try_lock_holding(*cache);
    if (!locked) cache->lock.unlock();
  }
  if (!locked) {
    mutex.lock_leaving_counts(cache);
    block = live.find(address);
  }
  const ExclusiveLock::Adopted lock(mutex);
  if (keep_solo<true>(block, cache)) return;
  deallocate_locked(address, block, cache);
}

// While solo, deallocate_locked's keeping of a block, counted apart (count_apart).
// Inline in deallocate, as take_solo is in allocate.
template <bool kMayFold>
[[gnu::always_inline]] inline bool Allocator::Impl::keep_solo(Block* block, ThreadCache* cache) {
  if (cache == nullptr || block == nullptr || block->owner != cache || block->cached ||
      !serving_apart() || !cacheable(*block)) {
    return false;
  }
  if (kMayFold ? streams.shared(block) : streams.any_shared() || !solo_counts.counts_like(*block)) {
    return false;
  }
  if (!cache->keep(block)) return false;
  if (kMayFold) {
    count_apart(*block, false);
  } else {
    solo_counts.freed(*block);
  }
  return true;
}

Block* Allocator::Impl::own_record(Block* block, const ThreadCache* cache) {
  if (cache == nullptr || solo.load(std::memory_order_relaxed) || planned != nullptr) return block;
  auto& records = thread_records[cache];
  if (records == nullptr) records = std::make_unique<core::ObjectPool<Block>>();
  const Segment& segment = *block->segment;
  return segment.pool->block_pool(segment.tier, segment.kind).move_record(block, *records);
}

// With the lock held; `block` is what `live` holds for the address.
void Allocator::Impl::deallocate_locked(std::uintptr_t address, Block* block, ThreadCache* known) {
  if (block == nullptr || block->cached) invalid_pointer(address, "free");
  PoolState& pool = *block->segment->pool;
  account_block(pool, *block, false);
  if (!observers.empty()) {
    notify(EventKind::free, block->address, block->size, block->requested, block->segment->tier,
           pool, block->tag);
  }
  if (planned != nullptr) planned->freed(*block);
  ThreadCache* cache = attach_cache(known);
  give_back_apart(cache);
  if (cache != nullptr) {
    if (!solo.load(std::memory_order_relaxed)) {
      if (!cache->counts_for(&pool)) cache->drop_credit();  // the thread moved to another pool
      cache->earn_credit(*block);
    }
    // The planned strategy's blocks go back at once: the large ones' offsets are planned,
    // and small ones kept held granules its fallback then grew past (a variable-length
    // training capture: 36 MiB against expandable's 34; 34 when statistics were read
    // often enough to return them).
    const bool keepable = planned == nullptr;
    if (block->owner == cache && keepable && !streams.shared(block) && cacheable(*block) &&
        cache->keep(block)) {
      return;
    }
  }
  live.erase(address);
  block->owner = nullptr;
  if (planned != nullptr && planned->release_block(pool, block)) return;
  if (!streams.hold(*device, block)) release_to_pool(block);
}

void Allocator::Impl::record_stream(void* ptr, StreamId stream) {
  std::lock_guard lock(mutex);
  streams.add_use(&live_block(ptr, "record_stream"), stream);
}

// Accounted as a free of the old block and an allocation of the new one, so stats
// and observers see resizes like any other allocation.
bool Allocator::Impl::resize(void* ptr, std::size_t bytes) {
  std::lock_guard lock(mutex);
  Block* block = live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (block == nullptr || block->cached) {
    invalid_pointer(reinterpret_cast<std::uintptr_t>(ptr), "resize");
  }
  if (bytes > kLargestRequest) return false;
  const std::size_t size = block_size(bytes);
  flush_recycled();  // a kept neighbour may be the room to grow into
  PoolState& pool = *block->segment->pool;
  BlockPool& blocks = pool.block_pool(block->segment->tier, block->segment->kind);
  account_block(pool, *block, false);
  if (!observers.empty()) {
    notify(EventKind::free, block->address, block->size, block->requested, block->segment->tier,
           pool, block->tag);
  }
  const bool resized = blocks.resize(block, size, config.granule);
  if (resized) block->requested = bytes;
  account_block(pool, *block, true);
  if (!observers.empty()) {
    notify(EventKind::alloc, block->address, block->size, block->requested, block->segment->tier,
           pool, block->tag);
  }
  return resized;
}

void Allocator::Impl::invalid_pointer(std::uintptr_t address, std::string_view operation) const {
  const std::string invalid = "invalid " + std::string(operation) + ": pointer ";
  char text[64];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
  flush_recycled();  // so a recycled block reads as free: a double free
  const std::string what = operation == "free" ? "double free: pointer " : invalid;
  for (const auto& pool : pools) {
    for (Tier tier : kAllTiers) {
      const std::string where = "pool '" + pool->name + "', " + std::string(tier_name(tier));
      for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
        for (const Segment* s = pool->block_pool(tier, kind).segments(); s != nullptr;
             s = s->next) {
          if (address < s->address || address >= s->address + s->size) continue;
          for (const Block* b = s->first; b != nullptr; b = b->next) {
            if (address == b->address && streams.holds(b)) {
              throw InvalidPointer(what + std::string(text) + " was already freed (" + where +
                                   "; it waits for its streams' work before reuse)");
            }
            // The pools cannot tell a block freed from the rest of a split one, nor, once
            // it merged with a free neighbour, from the inside of the merged block.
            const bool inside = address > b->address && address < b->address + b->size;
            if ((address == b->address || inside) && !b->allocated) {
              throw InvalidPointer(what + std::string(text) +
                                   " is free: freed already, or never returned by allocate() (" +
                                   where + ")");
            }
            if (inside) {
              throw InvalidPointer(invalid + std::string(text) + " is " +
                                   std::to_string(address - b->address) +
                                   " bytes inside a block; pass the pointer allocate() returned");
            }
          }
        }
      }
    }
  }
  // No segment holds it now; a block freed, then its segment given back, reads so too.
  throw InvalidPointer(invalid + std::string(text) +
                       " was not allocated by this allocator (device " + device->name() +
                       "), or was freed and its memory given back since (empty_cache, "
                       "remove_pool)");
}

// The bytes move outside the lock (a large copy must not stall other threads); the
// caller keeps both allocations live meanwhile, as with any use of its memory.
double Allocator::Impl::copy(void* dst, const void* src, std::size_t bytes) {
  Tier dst_tier = Tier::hbm;
  Tier src_tier = Tier::hbm;
  {
    std::lock_guard lock(mutex);
    const Block& to = live_block(dst, "copy");
    const Block& from = live_block(src, "copy");
    if (bytes > to.requested || bytes > from.requested) {
      throw Error("copy of " + std::to_string(bytes) + " bytes overruns an allocation (source " +
                  std::to_string(from.requested) + " bytes, destination " +
                  std::to_string(to.requested) + " bytes)");
    }
    dst_tier = to.segment->tier;
    src_tier = from.segment->tier;
  }
  if (bytes == 0) return 0.0;  // nothing moves: no copy to count
  const double seconds = device->copy(dst, dst_tier, src, src_tier, bytes);
  std::lock_guard lock(mutex);
  stats.copies[index(src_tier)][index(dst_tier)].add(bytes, seconds);
  return seconds;
}

const Block& Allocator::Impl::live_block(const void* ptr, std::string_view operation) const {
  const Block* block = live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (block == nullptr || block->cached) {
    if (!operation.empty()) invalid_pointer(reinterpret_cast<std::uintptr_t>(ptr), operation);
    char text[64];
    std::snprintf(text, sizeof text, "%p", ptr);
    throw InvalidPointer("pointer " + std::string(text) + " is not a live allocation");
  }
  return *block;
}

std::size_t Allocator::Impl::empty_cache() {
  std::lock_guard lock(mutex);
  flush_recycled();  // first: once streams are ordered, kept blocks go behind events
  streams.settle(*device, release_to_pool);
  std::size_t released = 0;
  for (Tier tier : kAllTiers) released += release_cached_everywhere(tier);
  return released;
}

std::uint64_t Allocator::Impl::largest_free_block(Tier tier) const {
  flush_recycled();
  std::uint64_t largest = 0;
  for (const auto& pool : pools) {
    for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
      largest = std::max<std::uint64_t>(largest, pool->block_pool(tier, kind).largest_free());
    }
  }
  return largest;
}

double Allocator::Impl::fragmentation(Tier tier) const {
  flush_recycled();
  std::uint64_t free_bytes = 0;
  for (const auto& pool : pools) {
    for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
      free_bytes += pool->block_pool(tier, kind).free_bytes();
    }
  }
  if (free_bytes == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_block(tier)) / static_cast<double>(free_bytes);
}

std::vector<SegmentInfo> Allocator::Impl::snapshot() const {
  flush_recycled();
  std::vector<SegmentInfo> segments;
  for (const auto& pool : pools) {
    for (Tier tier : kAllTiers) {
      for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
        for (const Segment* s = pool->block_pool(tier, kind).segments(); s != nullptr;
             s = s->next) {
          SegmentInfo info{s->address, s->size, tier, kind, pool->name, {}};
          for (const Block* b = s->first; b != nullptr; b = b->next) {
            info.blocks.push_back({b->address, b->size, b->requested, b->allocated, b->mapped,
                                   std::string(core::tag_text(b->tag))});
          }
          segments.push_back(std::move(info));
        }
      }
    }
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.address < b.address; });
  return segments;
}

core::OomContext Allocator::Impl::oom_context(PoolState& pool, std::size_t bytes, std::size_t size,
                                              const Refusal& refusal) const {
  core::OomContext c;
  c.requested_bytes = bytes;
  c.rounded_bytes = size;
  c.past_largest_block = bytes > kLargestRequest;
  if (config.strategy == Strategy::caching && source->kind_for(size) == PoolKind::small) {
    c.small_segment_bytes = config.small_segment;
  }
  c.pool = pool.name;
  c.pinned_tier = pool.pinned_tier;
  c.pool_quota_bytes = pool.quota_bytes;
  c.pool_reserved_bytes = pool.reserved_bytes();
  c.pool_allocated_bytes = static_cast<std::uint64_t>(pool.stats.allocated_bytes.all.current);
  if (pools.size() > 1) {
    for (const auto& each : pools) {
      core::PoolMemory& pool_memory = c.pools.emplace_back(
          core::PoolMemory{each->name, each->quota_bytes, each->reserved_bytes(),
                           static_cast<std::uint64_t>(each->stats.allocated_bytes.all.current)});
      for (Tier tier : kAllTiers) {
        pool_memory.reserved_by_tier[index(tier)] =
            static_cast<std::uint64_t>(each->stats.reserved_bytes.by_tier[index(tier)].current);
      }
    }
  }
  c.quota_refused = refusal.quota;
  if (refusal.quota) c.pool_quota_needed_bytes = quota_needed_bytes;
  c.arena_exhausted = refusal.arena;
  c.address_space_refused = refusal.address_space;
  c.strategy = std::string(strategy_name(config.strategy));
  c.max_split_size_set = config.max_split_size != Config{}.max_split_size;
  c.spill_to_ddr = config.spill_to_ddr;
  c.device_error = device->last_error();
  c.memory_fraction = memory_fraction;
  for (Tier tier : kAllTiers) {
    core::TierMemory& t = c.tiers[index(tier)];
    const TierInfo info = device->tier_info(tier);
    t.present = info.present;
    t.capacity_bytes = info.capacity_bytes;
    t.limit_bytes = tier_limit[index(tier)];
    t.reserved_bytes =
        static_cast<std::uint64_t>(stats.reserved_bytes.by_tier[index(tier)].current);
    t.allocated_bytes =
        static_cast<std::uint64_t>(stats.allocated_bytes.by_tier[index(tier)].current);
    t.free_cached_bytes = t.reserved_bytes - t.allocated_bytes;
    t.largest_free_bytes = largest_free_block(tier);
    t.fragmentation = fragmentation(tier);
    t.granule_bytes = info.present ? source->mapping_granule(tier, size) : 0;
  }
  if (c.tiers[index(Tier::hbm)].granule_bytes != 0) {
    c.granule_setting = source->kind_for(size) == PoolKind::small ? "expandable_small_granule"
                                                                  : "expandable_large_granule";
  }
  return c;
}

void Allocator::Impl::fail(PoolState& pool, std::size_t bytes, std::size_t size,
                           const Refusal& refusal) {
  fold_solo_counts();
  ++stats.num_ooms;
  ++pool.stats.num_ooms;
  if (!observers.empty()) {
    notify(EventKind::oom, 0, size, bytes, Tier::hbm, pool, core::current_tag_id());
  }
  throw OutOfMemory(core::explain_out_of_memory(oom_context(pool, bytes, size, refusal)), bytes,
                    pool.name);
}

void Allocator::Impl::notify(EventKind kind, std::uint64_t address, std::uint64_t bytes,
                             std::uint64_t requested, Tier tier, const PoolState& pool,
                             std::uint32_t tag) const {
  const Event event{kind, address, bytes, requested, tier, pool.name, core::tag_text(tag)};
  for (const auto& observer : observers) observer->on_event(event);
}

void Allocator::Impl::set_scope(const Impl* owner, PoolState* pool) {
  scoped_owner = owner;
  scoped_pool = pool;
}

const Allocator::Impl* Allocator::Impl::scope_owner() {
  return scoped_owner;
}

PoolState* Allocator::Impl::scope_pool() {
  return scoped_pool;
}

}  // namespace npumem
