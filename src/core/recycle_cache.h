// Recently freed HBM blocks kept whole, by exact size, so the next request of that
// size takes one back without touching the free index (the common case: every
// training iteration asks for the sizes the previous one freed). They count as free
// in the statistics; any path that needs the true free-block picture (growth,
// reclaim, snapshots, errors) flushes them back first.
#pragma once

#include <array>
#include <cstddef>
#include <functional>

#include "core/block.h"

namespace npumem::core {

class RecycleCache {
 public:
  // Keeps the block when its slot holds its size (or nothing) and has room.
  bool put(Block* block) {
    Slot& slot = slot_for(block->size);
    if (slot.count == 0) {
      slot.size = block->size;
      slot.pool = block->segment->pool;
    } else if (slot.size != block->size || slot.pool != block->segment->pool ||
               slot.count == kDepth) {
      return false;
    }
    block->free_next = slot.head;
    slot.head = block;
    ++slot.count;
    ++total_;
    return true;
  }
  // A kept block of exactly `size` from `pool`, or nullptr.
  Block* take(std::size_t size, const PoolState* pool) {
    Slot& slot = slot_for(size);
    if (slot.count == 0 || slot.size != size || slot.pool != pool) return nullptr;
    Block* block = slot.head;
    slot.head = block->free_next;
    block->free_next = nullptr;
    --slot.count;
    --total_;
    return block;
  }
  bool empty() const { return total_ == 0; }
  // Hands every kept block to `release` and forgets them.
  void flush(const std::function<void(Block*)>& release) {
    if (total_ == 0) return;
    for (Slot& slot : slots_) {
      while (slot.head != nullptr) {
        Block* block = slot.head;
        slot.head = block->free_next;
        block->free_next = nullptr;
        release(block);
      }
      slot.count = 0;
    }
    total_ = 0;
  }

 private:
  static constexpr std::size_t kSlots = 64;
  static constexpr unsigned kDepth = 8;
  struct Slot {
    std::size_t size = 0;
    const PoolState* pool = nullptr;
    Block* head = nullptr;
    unsigned count = 0;
  };
  Slot& slot_for(std::size_t size) { return slots_[((size >> 9) * 0x9E3779B1u >> 7) % kSlots]; }

  std::array<Slot, kSlots> slots_{};
  std::size_t total_ = 0;
};

}  // namespace npumem::core
