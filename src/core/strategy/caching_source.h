// The caching strategy: grow by device segments, keep them cached, give back
// wholly free segments on reclaim.
#pragma once

#include <functional>

#include "core/strategy/segment_source.h"
#include "npumem/allocator.h"

namespace npumem::core {

class CachingSource : public SegmentSource {
 public:
  explicit CachingSource(Allocator::Impl& allocator) : allocator_(allocator) {}
  GrowResult grow(PoolState& pool, BlockPool& blocks, std::size_t size) override;
  std::size_t release(PoolState& pool, BlockPool& blocks) override;
  void release_all(PoolState& pool, BlockPool& blocks) override;
  PoolKind kind_for(std::size_t size) const override;

  // Gives back free segments except those `keep` names (the static arena).
  std::size_t release_except(PoolState& pool, BlockPool& blocks,
                             const std::function<bool(const Segment&)>& keep);
  // Adds one device segment of exactly `bytes` to `blocks`.
  GrowResult add_segment(PoolState& pool, BlockPool& blocks, std::size_t bytes);

 private:
  std::size_t segment_size(const BlockPool& blocks, std::size_t size) const;
  Allocator::Impl& allocator_;
};

}  // namespace npumem::core
