// A thread's front cache in one allocator: blocks this thread freed, kept whole by
// exact size, and the statistics of the allocations and frees it served without the
// allocator's lock. Its own lock is taken by its thread on each such operation and
// by the allocator's slow path, which holds every cache's lock and folds their
// counters into the allocator's statistics, so anything read under the allocator's
// lock is exact.
//
// Peaks stay exact through credit: a cache serves an allocation only from credit,
// which its frees earn and the allocator's slow path takes back whenever the
// current value plus all credit would pass the peak. So no allocation served here
// can pass the peak, and the slow path, seeing the true current value, raises it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/pool/block.h"
#include "core/threads/spin_lock.h"

namespace npumem::core {

class ThreadCache {
 public:
  // The statistics a kept block counts in, and the splits of each it can count in
  // (the cache keeps blocks of one tier only).
  enum Counter { allocated_bytes, requested_bytes, allocation, kCounters };
  enum Split { all, small_pool, large_pool, kept_tier, kSplits };

  explicit ThreadCache(Tier kept_tier) : kept_tier_(kept_tier) {}

  // Keeps a freed block of the kept tier when its slot holds its size and pool (or
  // nothing) and has room; a large-pool one only when keep_large. Large blocks kept
  // whole raised the reserved peak on a shared trace (1.032 -> 1.087 on
  // vit_b_16_infer, replayed by one thread): the free index's best fit, lowest
  // address first, packs large segments tighter than reuse by recency.
  bool keep(Block* block) {
    if (block->segment->tier != kept_tier_ ||
        (block->segment->kind == PoolKind::large && !keep_large)) {
      return false;
    }
    Slot& slot = slot_for(block->size);
    const int kind = kind_split(*block->segment);
    if (slot.count == 0) {
      slot.size = block->size;
      slot.pool = block->segment->pool;
      slot.kind_split = kind;
    } else if (slot.size != block->size || slot.pool != block->segment->pool ||
               slot.kind_split != kind || slot.count == kDepth) {
      return false;
    }
    block->free_next = slot.head;
    slot.head = block;
    ++slot.count;
    ++kept_;
    block->cached = true;
    return true;
  }
  // A kept block of exactly `size` from `pool`, or nullptr.
  Block* take(std::size_t size, const PoolState* pool) {
    Slot& slot = slot_for(size);
    if (slot.count == 0 || slot.size != size || slot.pool != pool) return nullptr;
    Block* block = slot.head;
    slot.head = block->free_next;
    block->free_next = nullptr;
    block->cached = false;
    --slot.count;
    --kept_;
    return block;
  }
  // take() for an allocation served without the allocator's lock: only when the
  // credit covers it in every split the block counts in (see above); counted.
  Block* take_counted(std::size_t size, const PoolState* pool, std::size_t requested) {
    Slot& slot = slot_for(size);
    if (slot.count == 0 || slot.size != size || slot.pool != pool || pool_ != pool) return nullptr;
    const auto amounts = amounts_of(size, requested);
    const std::array<int, 3> splits = {all, slot.kind_split, kept_tier};
    for (int c = 0; c < kCounters; ++c) {
      for (int s : splits) {
        if (credit_[c][s] < amounts[c]) return nullptr;
      }
    }
    for (int c = 0; c < kCounters; ++c) {
      for (int s : splits) {
        credit_[c][s] -= amounts[c];
        added_[c][s] += amounts[c];
      }
    }
    counted_ = true;
    return take(size, pool);
  }
  // Whether a free from `pool` can be counted here (counters and credit are one pool's).
  bool counts_for(const PoolState* pool) const { return pool_ == nullptr || pool_ == pool; }
  // Counts a free served without the allocator's lock (after counts_for()); it earns credit.
  void count_free(const Block& block) {
    pool_ = block.segment->pool;
    counted_ = true;
    has_credit_ = true;
    const auto amounts = amounts_of(block.size, block.requested);
    for (int c = 0; c < kCounters; ++c) {
      for (int s : splits_of(*block.segment)) {
        credit_[c][s] += amounts[c];
        removed_[c][s] += amounts[c];
      }
    }
  }
  // Credit for a free counted under the allocator's lock (after counts_for()): the
  // slack it leaves below the peak may as well be this thread's (in the splits the
  // block shares with kept ones).
  void earn_credit(const Block& block) {
    pool_ = block.segment->pool;
    has_credit_ = true;
    const auto amounts = amounts_of(block.size, block.requested);
    for (int c = 0; c < kCounters; ++c) {
      for (int s = 0; s < kSplits; ++s) {
        if (counts_in(*block.segment, s, kept_tier_)) credit_[c][s] += amounts[c];
      }
    }
  }
  // The pool counters and credit belong to (nullptr: none).
  PoolState* pool() const { return pool_; }
  // Hands the counters to `apply(counter, split, added, removed)` and zeroes them.
  template <typename Apply>
  void fold(Apply&& apply) {
    if (!counted_) return;
    for (int c = 0; c < kCounters; ++c) {
      for (int s = 0; s < kSplits; ++s) {
        if (added_[c][s] != 0 || removed_[c][s] != 0) apply(c, s, added_[c][s], removed_[c][s]);
      }
    }
    added_ = {};
    removed_ = {};
    counted_ = false;
  }
  // False only when every credit is zero (true may still mean zero after revoke()).
  bool has_credit() const { return has_credit_; }
  std::int64_t credit(int counter, int split) const { return credit_[counter][split]; }
  // Takes back up to `amount` of credit; returns what it took.
  std::int64_t revoke(int counter, int split, std::int64_t amount) {
    const std::int64_t taken = std::min(amount, credit_[counter][split]);
    credit_[counter][split] -= taken;
    return taken;
  }
  // Takes back all credit and frees the cache to count another pool (after a fold).
  void drop_credit() {
    credit_ = {};
    has_credit_ = false;
    pool_ = nullptr;
  }
  // Whether a block of `segment` counts in this split of caches keeping `kept` blocks.
  static bool counts_in(const Segment& segment, int split, Tier kept) {
    return split == all || (split == small_pool && segment.kind == PoolKind::small) ||
           (split == large_pool && segment.kind == PoolKind::large) ||
           (split == kept_tier && segment.tier == kept);
  }
  // The splits a kept block counts in.
  static std::array<int, 3> splits_of(const Segment& segment) {
    return {all, kind_split(segment), kept_tier};
  }
  static int kind_split(const Segment& segment) {
    return segment.kind == PoolKind::small ? small_pool : large_pool;
  }
  // Hands every kept block to `release` and forgets them.
  template <typename Release>
  void flush(Release&& release) {
    if (kept_ == 0) return;
    for (Slot& slot : slots_) {
      while (slot.head != nullptr) {
        Block* block = slot.head;
        slot.head = block->free_next;
        block->free_next = nullptr;
        block->cached = false;
        release(block);
      }
      slot.count = 0;
    }
    kept_ = 0;
  }
  bool empty() const { return kept_ == 0; }

  SpinLock lock;
  bool retired = false;
  // Whether large-pool blocks are kept too (set under the allocator's lock): only
  // while several threads allocate, when the locked path costs every cache's lock.
  bool keep_large = false;  // its thread has exited; the next new thread takes it over

 private:
  static constexpr std::size_t kSlots = 64;
  static constexpr unsigned kDepth = 8;
  struct Slot {
    std::size_t size = 0;
    const PoolState* pool = nullptr;
    Block* head = nullptr;
    unsigned count = 0;
    int kind_split = small_pool;  // of its blocks (one size, one pool: one kind)
  };
  using Table = std::array<std::array<std::int64_t, kSplits>, kCounters>;

  Slot& slot_for(std::size_t size) { return slots_[((size >> 9) * 0x9E3779B1u >> 7) % kSlots]; }
  static std::array<std::int64_t, kCounters> amounts_of(std::size_t size, std::size_t requested) {
    return {static_cast<std::int64_t>(size), static_cast<std::int64_t>(requested), 1};
  }

  Tier kept_tier_;
  std::array<Slot, kSlots> slots_{};
  std::size_t kept_ = 0;
  PoolState* pool_ = nullptr;
  bool counted_ = false;  // counters hold something since the last fold
  bool has_credit_ = false;
  Table added_{};    // since the last fold
  Table removed_{};  // since the last fold
  Table credit_{};
};

}  // namespace npumem::core
