// The blocks of one pool kind (small or large) on one tier of one pool: its
// segments, their blocks, and a free index. Splits blocks on allocation and
// coalesces free neighbours on release. Knows nothing of devices or statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/block.h"
#include "core/free_index.h"
#include "core/object_pool.h"

namespace npumem::core {

class BlockPool {
 public:
  BlockPool(Tier tier, PoolKind kind, PoolState* pool) : tier_(tier), kind_(kind), pool_(pool) {}
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Takes a free block of at least `size` and at most `max_block` bytes, splitting off
  // the tail when it is at least split_remainder bytes and the block is smaller than
  // unsplittable_from (PyTorch's max_split_size: big cached blocks stay whole).
  Block* take(std::size_t size, std::size_t max_block, std::size_t split_remainder,
              std::size_t unsplittable_from);
  // Adds a new segment, whole and free.
  Segment* add_segment(std::uintptr_t address, std::size_t size);
  // Frees an allocated block, merging it with free neighbours; returns the merged block.
  Block* release(Block* block);
  // Removes every segment with no allocated block; calls give_back(segment) for each
  // before its records are dropped. Returns the bytes removed.
  std::size_t remove_free_segments(const std::function<void(const Segment&)>& give_back);

  Tier tier() const { return tier_; }
  PoolKind kind() const { return kind_; }
  std::size_t free_bytes() const { return free_bytes_; }
  std::size_t reserved_bytes() const { return reserved_bytes_; }
  std::size_t largest_free() const;
  std::size_t free_segment_bytes() const;  // bytes in segments with nothing allocated
  const Segment* segments() const { return segments_; }

 private:
  Block* split(Block* block, std::size_t size);
  void merge_into(Block* into, Block* absorbed);
  void drop_segment(Segment* segment);

  Tier tier_;
  PoolKind kind_;
  PoolState* pool_;
  FreeIndex index_;
  ObjectPool<Block> block_records_;
  Segment* segments_ = nullptr;
  std::size_t free_bytes_ = 0;
  std::size_t reserved_bytes_ = 0;
};

}  // namespace npumem::core
