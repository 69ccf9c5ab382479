// The blocks of one pool kind (small or large) on one tier of one pool: its
// segments, their blocks, and a free index. Splits blocks on allocation and
// coalesces free neighbours on release. Free blocks of expandable ranges may be
// unmapped (no physical memory); they sit in a second index and never serve a
// request until mapped. Knows nothing of devices or statistics.
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

  // Takes a free mapped block of at least `size` and at most `max_block` bytes,
  // splitting off the tail when it is at least split_remainder bytes and the block is
  // smaller than unsplittable_from (PyTorch's max_split_size: big blocks stay whole).
  Block* take(std::size_t size, std::size_t max_block, std::size_t split_remainder,
              std::size_t unsplittable_from);
  // Frees an allocated block, merging it with free neighbours; returns the merged block.
  Block* release(Block* block);
  // Grows an allocated block in place into its free mapped successor, or shrinks it
  // (freeing the tail when at least split_remainder). False when it cannot grow.
  bool resize(Block* block, std::size_t size, std::size_t split_remainder);

  // Adds a new segment as one free block, mapped (a device segment) or not (a
  // reserved expandable range).
  Segment* add_segment(std::uintptr_t address, std::size_t size, bool mapped = true);
  // Removes every segment with no allocated block that `keep` does not name; calls
  // give_back(segment) for each before its records are dropped. Returns the bytes.
  // Visits only such segments (kept in their own list): growth calls this each time
  // it passes the high-water mark, so a walk of all segments would cost O(live).
  std::size_t remove_free_segments(const std::function<bool(const Segment&)>& keep,
                                   const std::function<void(const Segment&)>& give_back);
  // Drops every record (the owner has returned the memory).
  void clear();

  // Expandable ranges: the best-fitting unmapped block of at least `size`.
  Block* find_unmapped(std::size_t size) const { return unmapped_.find(size, ~std::size_t{0}); }
  // Marks the first `bytes` of an unmapped block as mapped and free; returns the
  // free block they end up in after merging.
  Block* map_front(Block* unmapped, std::size_t bytes);
  // Marks [start, start + bytes) inside a free mapped block as unmapped.
  void unmap_range(Block* free_block, std::uintptr_t start, std::size_t bytes);
  // The largest free mapped block, or nullptr.
  Block* largest_free_block() const { return index_.largest(); }
  // The first free mapped block of at least min_size that accept(block) takes.
  template <typename Accept>
  Block* find_free(std::size_t min_size, Accept&& accept) const {
    return index_.find_first(min_size, accept);
  }

  Tier tier() const { return tier_; }
  PoolKind kind() const { return kind_; }
  std::size_t free_bytes() const { return free_bytes_; }          // free and mapped
  std::size_t reserved_bytes() const { return reserved_bytes_; }  // mapped
  std::size_t largest_free() const;
  const Segment* segments() const { return segments_; }

 private:
  Block* split(Block* block, std::size_t size);
  void merge_into(Block* into, Block* absorbed);
  // Merges a free block with free neighbours in the same mapped state, files it in its
  // index and returns the merged block.
  Block* settle_free(Block* block);
  void file(Block* block);
  void unfile(Block* block);
  void drop_segment(Segment* segment);
  void link_idle(Segment* segment);
  void unlink_idle(Segment* segment);

  Tier tier_;
  PoolKind kind_;
  PoolState* pool_;
  FreeIndex index_;     // free mapped blocks
  FreeIndex unmapped_;  // free unmapped blocks
  ObjectPool<Block> block_records_;
  Segment* segments_ = nullptr;
  Segment* idle_ = nullptr;  // segments with no allocated block
  std::size_t free_bytes_ = 0;
  std::size_t reserved_bytes_ = 0;
};

}  // namespace npumem::core
