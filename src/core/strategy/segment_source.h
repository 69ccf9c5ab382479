// A strategy: how a pool's block pools obtain memory from the device and give it
// back. The allocator's flow (tiers, reclaim, OOM) is the same for every strategy;
// only this part differs.
#pragma once

#include <cstddef>

#include "core/pool/block_pool.h"
#include "core/pool/pool_state.h"

namespace npumem::core {

enum class GrowResult {
  ok,
  device_refused,  // the device call failed (capacity, fault)
  // No virtual address range could be reserved (expandable: each range of a pool, tier
  // and size class reserves twice what it may map; the process's address space ran out).
  address_space_refused,
  limit_refused,    // the allocator's tier limit would be passed
  quota_refused,    // the pool's quota would be passed
  arena_exhausted,  // the static arena is full and fallback is off
};

class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  // Makes a free mapped block of at least `size` bytes available in `blocks`.
  virtual GrowResult grow(PoolState& pool, BlockPool& blocks, std::size_t size) = 0;
  // Gives back what free memory of `blocks` the strategy can; returns the bytes.
  virtual std::size_t release(PoolState& pool, BlockPool& blocks) = 0;
  // Returns all of the pool's memory to the device (allocator teardown).
  virtual void release_all(PoolState& pool, BlockPool& blocks) = 0;
  // A pool was created (the static strategy reserves its arena here).
  virtual void pool_created(PoolState& /*pool*/) {}
  // Gives back all memory of `blocks`, which holds no live block: its pool is being
  // removed. Returns the bytes. What release() keeps (a static arena) goes too.
  virtual std::size_t release_removed(PoolState& pool, BlockPool& blocks) {
    return release(pool, blocks);
  }
  // The pool kind that serves a request of `size` rounded bytes.
  virtual PoolKind kind_for(std::size_t size) const = 0;
  // The unit in which memory for a request of `size` rounded bytes on `tier` is mapped:
  // an expandable granule; 0 where it comes in segments sized to the request.
  virtual std::size_t mapping_granule(Tier /*tier*/, std::size_t /*size*/) const { return 0; }
};

}  // namespace npumem::core
