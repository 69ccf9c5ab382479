// The static strategy: each pool's arena is reserved once, when the pool is created
// (the default pool's from static_size, a named pool's from its quota), and every
// allocation is carved from it: no device call afterwards, so latency is flat.
// When the arena is full: an OutOfMemory, or with static_fallback the caching
// strategy's segments. One arena serves requests of every size (large pool).
#pragma once

#include <set>

#include "core/strategy/caching_source.h"

namespace npumem::core {

class StaticSource : public SegmentSource {
 public:
  explicit StaticSource(Allocator::Impl& allocator) : allocator_(allocator), fallback_(allocator) {}
  GrowResult grow(PoolState& pool, BlockPool& blocks, std::size_t size) override;
  std::size_t release(PoolState& pool, BlockPool& blocks) override;
  void release_all(PoolState& pool, BlockPool& blocks) override;
  std::size_t release_removed(PoolState& pool, BlockPool& blocks) override;
  void pool_created(PoolState& pool) override;
  PoolKind kind_for(std::size_t /*size*/) const override { return PoolKind::large; }

 private:
  Allocator::Impl& allocator_;
  CachingSource fallback_;
  std::set<std::uintptr_t> arenas_;  // segment addresses that are arenas
};

}  // namespace npumem::core
