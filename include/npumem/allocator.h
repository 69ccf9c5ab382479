// The tiered caching allocator: HBM first, then DDR, then reclaim, then an
// OutOfMemory that explains itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  Stats stats;
};

class Allocator {
 public:
  explicit Allocator(std::shared_ptr<Device> device, Config config = {});
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Returns memory of at least `bytes` (aligned to the granule) from the current
  // thread's pool. Throws OutOfMemory. allocate(0) returns a unique valid pointer.
  void* allocate(std::size_t bytes);
  // Throws InvalidPointer for a pointer not live in this allocator (changing nothing).
  void deallocate(void* ptr);
  // Grows or shrinks a live allocation in place (growing needs a free neighbour, as
  // aclrtMemReuse); returns false, changing nothing, when it cannot. Throws
  // InvalidPointer for a pointer that is not live.
  bool resize(void* ptr, std::size_t bytes);

  Tier tier_of(const void* ptr) const;                 // throws InvalidPointer
  std::size_t allocation_size(const void* ptr) const;  // requested bytes; throws

  Stats stats() const;
  void reset_peak_stats();
  // Releases every cached free segment to the device; returns the bytes released.
  std::size_t empty_cache();
  std::vector<SegmentInfo> snapshot() const;
  // Largest free block and fragmentation (1 - largest_free / free_reserved) of a tier.
  std::uint64_t largest_free_block(Tier tier) const;
  double fragmentation(Tier tier) const;

  // Named pools with quotas (0: none). The default pool is "default".
  void create_pool(const std::string& name, std::uint64_t quota_bytes = 0);
  std::vector<PoolInfo> pools() const;

  // Marks the start of an iteration (training step, inference batch): observers see an
  // EventKind::iteration event; strategies and leak checks that learn per iteration use it.
  void mark_iteration();

  void add_observer(std::shared_ptr<AllocatorObserver> observer);
  void remove_observer(const std::shared_ptr<AllocatorObserver>& observer);

  Device& device() const;
  // The settings in effect (the strategy after any fallback).
  const Config& config() const;
  // Problems met at construction that did not stop it, e.g. a strategy fallback.
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

 private:
  const Allocator::Impl* previous_owner_;
  core::PoolState* previous_pool_;
};

}  // namespace npumem
