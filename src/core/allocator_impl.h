// The allocator's state behind the public facade (pimpl): pools, live blocks,
// statistics and the tier flow HBM -> DDR -> reclaim -> OutOfMemory. The strategy
// (a SegmentSource) decides how memory comes from the device and goes back.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/oom_report.h"
#include "core/pointer_map.h"
#include "core/pool_state.h"
#include "core/recycle_cache.h"
#include "core/segment_source.h"
#include "core/spin_lock.h"
#include "npumem/allocator.h"

namespace npumem {

struct Allocator::Impl {
  Impl(std::shared_ptr<Device> device, Config config);
  ~Impl();

  // The public operations (the facade holds the lock where these do not).
  void* allocate(std::size_t bytes);
  void deallocate(void* ptr);
  bool resize(void* ptr, std::size_t bytes);
  const core::Block& live_block(const void* ptr) const;  // throws InvalidPointer
  std::size_t empty_cache();
  std::vector<SegmentInfo> snapshot() const;
  std::uint64_t largest_free_block(Tier tier) const;
  double fragmentation(Tier tier) const;
  core::PoolState& create_pool(const std::string& name, std::uint64_t quota_bytes);
  core::PoolState* find_pool(const std::string& name) const;
  // Statistics as users see them: the allocator's (nullptr) or one pool's.
  Stats public_stats(const core::PoolState* pool) const;
  // The calling thread's pool scope (PoolScope): which allocator, which pool.
  static void set_scope(const Impl* owner, core::PoolState* pool);
  static const Impl* scope_owner();
  static core::PoolState* scope_pool();

  // For the strategies: limits, accounting and events. Called with the lock held.
  std::uint64_t limit(Tier tier) const { return tier_limit[static_cast<int>(tier)]; }
  std::size_t granularity(Tier tier) const { return tier_granularity[static_cast<int>(tier)]; }
  core::GrowResult admit(const core::PoolState& pool, Tier tier, std::size_t bytes) const;
  bool would_raise_high_water(Tier tier, std::size_t bytes) const;
  void add_reserved(core::PoolState& pool, Tier tier, PoolKind kind, std::int64_t bytes);
  void add_segments(core::PoolState& pool, Tier tier, PoolKind kind, std::int64_t count);
  void count_device_call(core::PoolState& pool, bool allocation);
  std::size_t release_cached(core::PoolState& pool, Tier tier);
  // release_cached on the way to serving a request of `size` bytes (under pressure):
  // counted in num_reclaims and reported to observers when anything was released.
  std::size_t reclaim(core::PoolState& pool, Tier tier, std::size_t size);
  // Returns the recycle cache's blocks to their block pools (coalescing them).
  void flush_recycled() const;
  void notify(EventKind kind, std::uint64_t address, std::uint64_t bytes, std::uint64_t requested,
              Tier tier, const core::PoolState& pool, std::uint32_t tag = 0) const;

  std::shared_ptr<Device> device;
  Config config;
  mutable core::SpinLock mutex;
  std::vector<std::unique_ptr<core::PoolState>> pools;  // pools[0] is "default"
  core::PointerMap live;
  Stats stats;
  std::vector<std::shared_ptr<AllocatorObserver>> observers;
  std::vector<std::string> warnings;
  // Per-pool block statistics start when the first named pool is created.
  bool per_pool_stats = false;

 private:
  struct Refusal {
    bool quota = false;
    bool arena = false;
  };

  core::PoolState& current_pool();
  core::Block* allocate_block(core::PoolState& pool, std::size_t size, PoolKind kind,
                              Refusal& refusal);
  core::Block* allocate_on_tier(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind,
                                Refusal& refusal);
  core::GrowResult grow(core::PoolState& pool, Tier tier, PoolKind kind, std::size_t size);
  core::Block* take_cached(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind);
  std::size_t release_cached_everywhere(Tier tier);
  // reclaim in every pool.
  std::size_t reclaim_everywhere(core::PoolState& pool, Tier tier, std::size_t size);
  std::size_t counted_reclaim(core::PoolState& pool, Tier tier, std::size_t size,
                              std::size_t released);
  void account_block(core::PoolState& pool, const core::Block& block, bool allocated);
  [[noreturn]] void fail(core::PoolState& pool, std::size_t bytes, std::size_t size,
                         const Refusal& refusal);
  [[noreturn]] void invalid_free(std::uintptr_t address) const;
  void release_everything();
  core::OomContext oom_context(core::PoolState& pool, std::size_t bytes, std::size_t size,
                               const Refusal& refusal) const;

  std::unique_ptr<core::SegmentSource> source;
  mutable core::RecycleCache recycled;
  std::array<std::uint64_t, kTierCount> tier_limit{};
  std::array<std::uint64_t, kTierCount> tier_granularity{};
  // Highest reserved bytes per tier ever reached; unlike the peak stat, not reset.
  std::array<std::uint64_t, kTierCount> reserved_high_water{};
};

}  // namespace npumem
