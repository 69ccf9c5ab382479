// A thread's front cache in one allocator: blocks this thread freed, kept whole by
// exact size, and the statistics of the allocations and frees it served without the
// allocator's lock. Its own lock is taken by its thread on each such operation and
// by the allocator's slow path, which holds every cache's lock and folds their
// counters into the allocator's statistics, so anything read under the allocator's
// lock is exact.
//
// Peaks stay exact through credit: a cache serves an allocation only from credit,
// which its frees earn, the slow path grants from the slack no cache claims when a
// cache runs short, and takes back whenever the current value plus all credit would
// pass the peak. So no allocation served here can pass the peak, and the slow path,
// seeing the true current value, raises it.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/pool/block.h"
#include "core/threads/spin_lock.h"

namespace npumem::core {

class alignas(64) ThreadCache {  // a line of its own: each thread writes its cache on every call
 public:
  // The statistics a kept block counts in. A cache keeps blocks of one tier only, so
  // a block of kind k counts in the all, k and kept-tier splits of each statistic: the
  // counters are split by kind, and the credit in two parts, one for the splits every
  // kept block counts in (all and the kept tier) and one per kind. An allocation
  // served here spends both parts, a free counted here earns both.
  enum Counter { allocated_bytes, requested_bytes, allocation, kCounters };
  static constexpr int kKinds = 2;  // indexed by PoolKind
  enum Credit { common, small_kind, large_kind, kCredits };
  static constexpr int kind_credit(int kind) { return small_kind + kind; }

  explicit ThreadCache(Tier kept_tier) : kept_tier_(kept_tier) {}

  // Keeps a freed block of the kept tier when its slot holds its size and pool (or
  // nothing) and has room; a large-pool one only as keep_large says.
  [[gnu::always_inline]] bool keep(Block* block) {
    if (block->segment->tier != kept_tier_ ||
        (block->segment->kind == PoolKind::large && !keeps_large(*block))) {
      return false;
    }
    const std::size_t index = slot_index(block->size);
    Slot& slot = slots_[index];
    const PoolKind kind = block->segment->kind;
    if (slot.count == 0) {
      slot.size = block->size;
      slot.pool = block->segment->pool;
      slot.stream = block->stream;
      slot.kind = kind;
    } else if (slot.size != block->size || slot.pool != block->segment->pool ||
               slot.stream != block->stream || slot.kind != kind || slot.count == kDepth) {
      return false;
    }
    block->free_next = slot.head;
    slot.head = block;
    ++slot.count;
    ++kept_[static_cast<int>(kind)];
    occupied_[static_cast<int>(kind)] |= std::uint64_t{1} << index;
    block->cached = true;
    return true;
  }
  // A kept block of exactly `size` from `pool` that `stream` freed, or nullptr: a
  // stream may take back at once what it freed itself (stream_order.h).
  Block* take(std::size_t size, const PoolState* pool, StreamId stream) {
    Slot& slot = slot_for(size);
    if (!holds(slot, size, pool, stream)) return nullptr;
    return pop(slot);
  }
  // take() for an allocation served without the allocator's lock: only when both
  // parts of the credit cover it (see above); counted.
  Block* take_counted(std::size_t size, const PoolState* pool, StreamId stream,
                      std::size_t requested) {
    Slot& slot = slot_for(size);
    if (!holds(slot, size, pool, stream) || pool_ != pool) return nullptr;
    const int kind = static_cast<int>(slot.kind);
    const auto amounts = amounts_of(size, requested);
    if (!spend(kind, amounts)) {
      starved_ = true;
      return nullptr;
    }
    add_to(added_, kind, amounts);
    counted_ = true;
    return pop(slot);
  }
  // Gives up the credit an allocation of `block` counted under the allocator's lock
  // uses up, when this cache holds that much: the slack the block took is then the
  // credit it gave up, and no other cache need be looked at. False: nothing changed.
  bool give_up_credit(const Block& block) {
    return spend(static_cast<int>(block.segment->kind), amounts_of(block.size, block.requested));
  }
  // Whether a free from `pool` can be counted here (counters and credit are one pool's).
  bool counts_for(const PoolState* pool) const { return pool_ == nullptr || pool_ == pool; }
  // Counts a free served without the allocator's lock (after counts_for() and keep()):
  // it earns credit.
  void count_free(const Block& block) {
    pool_ = block.segment->pool;
    counted_ = true;
    has_credit_ = true;
    const int kind = static_cast<int>(block.segment->kind);
    const auto amounts = amounts_of(block.size, block.requested);
    earn(kind, amounts);
    add_to(removed_, kind, amounts);
  }
  // Credit for a free of the kept tier counted under the allocator's lock (after
  // counts_for()): the slack it leaves below the peaks may as well be this thread's.
  void earn_credit(const Block& block) {
    if (block.segment->tier != kept_tier_) return;  // it leaves no slack in the kept tier
    pool_ = block.segment->pool;
    has_credit_ = true;
    earn(static_cast<int>(block.segment->kind), amounts_of(block.size, block.requested));
  }
  // Credit the allocator's slow path grants (after counts_for()): slack below the
  // peaks that no cache holds yet.
  void grant(PoolState* pool, int counter, Credit part, std::int64_t amount) {
    pool_ = pool;
    has_credit_ = true;
    credit_[counter][part] += amount;
  }
  // Whether an allocation found its block here but not the credit for it, since the
  // last call: the slow path then grants what slack there is.
  bool take_starved() { return std::exchange(starved_, false); }
  // The pool counters and credit belong to (nullptr: none).
  PoolState* pool() const { return pool_; }
  // Hands the counters to `apply(counter, kind, added, removed)` and zeroes them.
  template <typename Apply>
  void fold(Apply&& apply) {
    if (!counted_) return;
    for (int c = 0; c < kCounters; ++c) {
      for (int k = 0; k < kKinds; ++k) {
        if (added_[c][k] != 0 || removed_[c][k] != 0) apply(c, k, added_[c][k], removed_[c][k]);
      }
    }
    added_ = {};
    removed_ = {};
    counted_ = false;
  }
  // False only when every credit is zero (true may still mean zero after revoke()).
  bool has_credit() const { return has_credit_; }
  std::int64_t credit(int counter, Credit part) const { return credit_[counter][part]; }
  // Takes back up to `amount` of credit; returns what it took.
  std::int64_t revoke(int counter, Credit part, std::int64_t amount) {
    const std::int64_t taken = std::min(amount, credit_[counter][part]);
    credit_[counter][part] -= taken;
    return taken;
  }
  // Takes back all credit and frees the cache to count another pool (after a fold).
  void drop_credit() {
    credit_ = {};
    has_credit_ = false;
    pool_ = nullptr;
  }
  // Hands every kept block to `release` and forgets them.
  template <typename Release>
  void flush(Release&& release) {
    if (empty()) return;
    for (Slot& slot : slots_) {
      while (slot.head != nullptr) release(pop(slot));
    }
    occupied_ = {};
  }
  bool empty() const { return kept_[0] == 0 && kept_[1] == 0; }
  // Hands to `release` the kept blocks of `kind` that a best-fit search for `size`
  // bytes could use: those of at least that size, and those that would merge with a
  // free neighbour. The rest stay. The neighbours' `allocated` changes only under the
  // allocator's lock, which the caller holds.
  template <typename Release>
  void give_back_fits(PoolKind kind, std::size_t size, Release&& release) {
    std::uint64_t& occupied = occupied_[static_cast<int>(kind)];
    for (std::uint64_t left = occupied; left != 0; left &= left - 1) {
      const unsigned index = static_cast<unsigned>(std::countr_zero(left));
      Slot& slot = slots_[index];
      if (slot.count == 0 || slot.kind != kind) {
        occupied &= ~(std::uint64_t{1} << index);
        continue;
      }
      const bool all = slot.size >= size;
      Block** link = &slot.head;
      while (*link != nullptr) {
        Block* block = *link;
        if (!all && !merges(*block)) {
          link = &block->free_next;
          continue;
        }
        release(unlink(slot, link));
      }
      if (slot.count == 0) occupied &= ~(std::uint64_t{1} << index);
    }
  }

  // Which large-pool blocks a cache keeps. Kept whole, they raised the reserved peak
  // on shared traces (caching on mobilenet_v2_infer 1.088 -> 1.318, replayed by one
  // thread): the free index's best fit, lowest address first, packs large segments
  // tighter than reuse by recency. So all of them only while several threads
  // allocate, when the locked path costs every cache's lock. A lone thread's cache
  // keeps one with no free neighbour, and gives it back before the allocator's next
  // locked operation on the pools: until then, the pools would have handed that
  // block to a request of its size (an exact fit, at the head of its free-index
  // bucket) and to nothing else, so keeping it changes no placement.
  enum class LargeBlocks : std::uint8_t {
    none,       // a lone thread's where best fit is not the rule (expandable, planned)
    one_apart,  // a lone thread's under best fit
    all,        // while several threads allocate
  };

  SpinLock lock;
  bool retired = false;  // its thread has exited; the next new thread takes it over
  LargeBlocks keep_large = LargeBlocks::none;  // set under the allocator's lock

 private:
  static constexpr std::size_t kSlots = 64;
  static constexpr unsigned kDepth = 8;
  struct Slot {
    std::size_t size = 0;
    const PoolState* pool = nullptr;
    Block* head = nullptr;
    StreamId stream = 0;  // the stream its blocks were allocated on
    unsigned count = 0;
    PoolKind kind = PoolKind::small;  // of its blocks (one size, one pool: one kind)
  };
  using Table = std::array<std::array<std::int64_t, kKinds>, kCounters>;
  using CreditTable = std::array<std::array<std::int64_t, kCredits>, kCounters>;

  // Masks and a multiply: no division on the hot path.
  static std::size_t slot_index(std::size_t size) {
    return ((size >> 9) * 0x9E3779B1u >> 7) & (kSlots - 1);
  }
  Slot& slot_for(std::size_t size) { return slots_[slot_index(size)]; }
  bool keeps_large(const Block& block) const {
    switch (keep_large) {
      case LargeBlocks::none:
        return false;
      case LargeBlocks::one_apart:
        return kept_[static_cast<int>(PoolKind::large)] == 0 && !merges(block);
      case LargeBlocks::all:
        return true;
    }
    return false;
  }
  // Whether freeing `block` to its pool would merge it with a free neighbour.
  static bool merges(const Block& block) {
    return (block.prev != nullptr && !block.prev->allocated) ||
           (block.next != nullptr && !block.next->allocated);
  }
  static bool holds(const Slot& slot, std::size_t size, const PoolState* pool, StreamId stream) {
    return slot.count != 0 && slot.size == size && slot.pool == pool && slot.stream == stream;
  }
  // Takes the block `link` points to (the slot's head or a block's free_next) out of
  // the slot.
  Block* unlink(Slot& slot, Block** link) {
    Block* block = *link;
    *link = block->free_next;
    block->free_next = nullptr;
    block->cached = false;
    --slot.count;
    --kept_[static_cast<int>(slot.kind)];
    return block;
  }
  Block* pop(Slot& slot) { return unlink(slot, &slot.head); }
  using Amounts = std::array<std::int64_t, kCounters>;
  static Amounts amounts_of(std::size_t size, std::size_t requested) {
    return {static_cast<std::int64_t>(size), static_cast<std::int64_t>(requested), 1};
  }
  // Takes `amounts` from both parts of the credit a block of `kind` spends, when both
  // cover them; false (nothing taken) otherwise.
  bool spend(int kind, const Amounts& amounts) {
    const int own = kind_credit(kind);
    if (!covers(allocated_bytes, own, amounts) || !covers(requested_bytes, own, amounts) ||
        !covers(allocation, own, amounts)) {
      return false;
    }
    add_credit(own, {-amounts[allocated_bytes], -amounts[requested_bytes], -amounts[allocation]});
    return true;
  }
  // Adds `amounts` to both parts of the credit a block of `kind` earns.
  void earn(int kind, const Amounts& amounts) { add_credit(kind_credit(kind), amounts); }
  // These three run on every call without the allocator's lock, written out per counter
  // as SoloCounts' are: GCC kept loops of three (callgrind, two threads' mixed pairs:
  // 418 -> 308 instructions a pair).
  bool covers(int counter, int own, const Amounts& amounts) const {
    return credit_[counter][common] >= amounts[counter] &&
           credit_[counter][own] >= amounts[counter];
  }
  void add_credit(int own, const Amounts& amounts) {
    credit_[allocated_bytes][common] += amounts[allocated_bytes];
    credit_[allocated_bytes][own] += amounts[allocated_bytes];
    credit_[requested_bytes][common] += amounts[requested_bytes];
    credit_[requested_bytes][own] += amounts[requested_bytes];
    credit_[allocation][common] += amounts[allocation];
    credit_[allocation][own] += amounts[allocation];
  }
  static void add_to(Table& table, int kind, const Amounts& amounts) {
    table[allocated_bytes][kind] += amounts[allocated_bytes];
    table[requested_bytes][kind] += amounts[requested_bytes];
    table[allocation][kind] += amounts[allocation];
  }

  Tier kept_tier_;
  std::array<Slot, kSlots> slots_{};
  std::array<std::size_t, kKinds> kept_{};  // blocks kept, by kind
  // By kind, the slots that may hold blocks (bit i: slots_[i]); set on keeping, cleared
  // lazily, so that taking a block back costs nothing more.
  std::array<std::uint64_t, kKinds> occupied_{};
  PoolState* pool_ = nullptr;
  bool counted_ = false;  // counters hold something since the last fold
  bool has_credit_ = false;
  bool starved_ = false;
  Table added_{};    // since the last fold
  Table removed_{};  // since the last fold
  CreditTable credit_{};
};

}  // namespace npumem::core
