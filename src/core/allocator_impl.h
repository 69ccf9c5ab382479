// The allocator's state behind the public facade (pimpl): pools, live blocks,
// statistics and the tier flow HBM -> DDR -> reclaim -> OutOfMemory.
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
#include "npumem/allocator.h"

namespace npumem {

struct Allocator::Impl {
  Impl(std::shared_ptr<Device> device, Config config);
  ~Impl();

  void* allocate(std::size_t bytes);
  void deallocate(void* ptr);
  const core::Block& live_block(const void* ptr) const;  // throws InvalidPointer
  std::size_t empty_cache();
  std::vector<SegmentInfo> snapshot() const;
  std::uint64_t largest_free_block(Tier tier) const;
  double fragmentation(Tier tier) const;
  core::PoolState* find_pool(const std::string& name) const;
  // The calling thread's pool scope (PoolScope): which allocator, which pool.
  static void set_scope(const Impl* owner, core::PoolState* pool);
  static const Impl* scope_owner();
  static core::PoolState* scope_pool();

  std::shared_ptr<Device> device;
  Config config;
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<core::PoolState>> pools;  // pools[0] is "default"
  core::PointerMap live;
  Stats stats;
  std::vector<std::shared_ptr<AllocatorObserver>> observers;
  std::array<std::uint64_t, kTierCount> tier_limit{};
  std::array<std::uint64_t, kTierCount> tier_granularity{};
  // Highest reserved bytes per tier ever reached; unlike the peak stat, not reset.
  std::array<std::uint64_t, kTierCount> reserved_high_water{};

 private:
  enum class GrowResult { ok, device_refused, limit_refused, quota_refused };

  core::PoolState& current_pool();
  core::Block* allocate_block(core::PoolState& pool, std::size_t size, PoolKind kind,
                              bool& quota_refused);
  core::Block* allocate_on_tier(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind,
                                bool& quota_refused);
  core::Block* take_cached(core::PoolState& pool, Tier tier, std::size_t size, PoolKind kind);
  GrowResult grow(core::PoolState& pool, Tier tier, PoolKind kind, std::size_t size);
  std::size_t segment_size(Tier tier, PoolKind kind, std::size_t size) const;
  std::size_t release_cached(core::PoolState& pool, Tier tier);
  std::size_t release_cached_everywhere(Tier tier);
  void account_block(core::PoolState& pool, const core::Block& block, bool allocated);
  void account_segment(core::PoolState& pool, const core::Segment& segment, bool added);
  [[noreturn]] void fail(core::PoolState& pool, std::size_t bytes, std::size_t size,
                         bool quota_refused);
  [[noreturn]] void invalid_free(std::uintptr_t address) const;
  core::OomContext oom_context(core::PoolState& pool, std::size_t bytes, std::size_t size,
                               bool quota_refused) const;
  void notify(EventKind kind, std::uint64_t address, std::uint64_t bytes, std::uint64_t requested,
              Tier tier, const core::PoolState& pool, std::uint32_t tag = 0) const;
};

}  // namespace npumem
