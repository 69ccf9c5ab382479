// A lone thread's allocations and frees (its front cache's kept blocks and the
// locked path's alike, while nothing else needs the statistics), counted here instead
// of in the nine statistics each touches (three counters, each in its all, kind and
// tier splits), and folded into them before anything reads them or changes them
// otherwise. Peaks stay exact: between folds nothing else changes those statistics,
// so the highest value each reached is its value at the last fold plus the highest
// running sum of the changes since. One pool and tier at a time; both kinds, the all
// and tier splits changing by their sum. That sum's additions and net are the kinds'
// summed when folded; only its highest is kept apart, and only once both kinds
// counted (until then it is the one kind's), so a free updates one kind's net alone.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/pool/block.h"
#include "npumem/stats.h"

namespace npumem::core {

class SoloCounts {
 public:
  bool empty() const { return pool_ == nullptr; }
  // Whether `block` counts in the pool and tier counted here; when not, fold, clear()
  // and start() with it.
  bool counts_like(const Block& block) const {
    return block.segment->pool == pool_ && block.segment->tier == tier_;
  }
  void start(const Block& block) {
    pool_ = block.segment->pool;
    tier_ = block.segment->tier;
    first_kind_ = block.segment->kind;
  }
  // Written out per counter, here and in fold_into: these run on every call.
  // allocated out of line: inline, its caller saved more registers on every call
  // (measured: 27 more instructions per alloc+free pair of one size).
  [[gnu::noinline]] void allocated(const Block& block) {
    Sums& kind = sums_of(block);
    add(kind, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    add(kind, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    add(kind, kAllocations, 1);
    if (mixed_) {
      raise_both_highest(kAllocatedBytes);
      raise_both_highest(kRequestedBytes);
      raise_both_highest(kAllocations);
    }
  }
  void freed(const Block& block) {
    Sums& kind = sums_of(block);
    subtract(kind, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    subtract(kind, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    subtract(kind, kAllocations, 1);
  }
  // The pool whose statistics (beside the allocator's) the counts are for.
  PoolState* pool() const { return pool_; }
  // Adds the counts to `stats` (the allocator's, then the pool's when kept apart);
  // clear() after.
  void fold_into(Stats& stats) const {
    const Sums both = this->both();
    fold_into(stats.allocated_bytes, both, kAllocatedBytes);
    fold_into(stats.requested_bytes, both, kRequestedBytes);
    fold_into(stats.allocation, both, kAllocations);
  }
  void clear() { *this = SoloCounts{}; }

 private:
  enum Counter { kAllocatedBytes, kRequestedBytes, kAllocations, kCounters };
  using Amounts = std::array<std::int64_t, kCounters>;
  struct Sums {
    Amounts added{};
    Amounts net{};      // added less removed
    Amounts highest{};  // of net since the last fold (0 at it)
  };

  Sums& sums_of(const Block& block) {
    const PoolKind kind = block.segment->kind;
    if (kind != first_kind_ && !mixed_) {
      both_highest_ = by_kind_[static_cast<std::size_t>(first_kind_)].highest;
      mixed_ = true;
    }
    return by_kind_[static_cast<std::size_t>(kind)];
  }
  static void add(Sums& sums, Counter c, std::int64_t amount) {
    sums.added[c] += amount;
    sums.net[c] += amount;
    sums.highest[c] = std::max(sums.highest[c], sums.net[c]);
  }
  static void subtract(Sums& sums, Counter c, std::int64_t amount) { sums.net[c] -= amount; }
  void raise_both_highest(Counter c) {
    both_highest_[c] = std::max(both_highest_[c], by_kind_[0].net[c] + by_kind_[1].net[c]);
  }
  // The sums of both kinds: each kind's while only one counted.
  Sums both() const {
    if (!mixed_) return by_kind_[static_cast<std::size_t>(first_kind_)];
    Sums both;
    for (int c = 0; c < kCounters; ++c) {
      both.added[c] = by_kind_[0].added[c] + by_kind_[1].added[c];
      both.net[c] = by_kind_[0].net[c] + by_kind_[1].net[c];
    }
    both.highest = both_highest_;
    return both;
  }
  void fold_into(StatSplit& split, const Sums& both, Counter c) const {
    fold_into(split.all, both, c);
    fold_into(split.by_tier[static_cast<std::size_t>(tier_)], both, c);
    for (std::size_t kind = 0; kind < by_kind_.size(); ++kind) {
      fold_into(split.by_kind[kind], by_kind_[kind], c);
    }
  }
  static void fold_into(Stat& stat, const Sums& sums, Counter c) {
    stat.peak = std::max(stat.peak, stat.current + sums.highest[c]);
    stat.current += sums.net[c];
    stat.allocated += sums.added[c];
    stat.freed += sums.added[c] - sums.net[c];
  }

  PoolState* pool_ = nullptr;  // nullptr: nothing counted since the last fold
  Tier tier_ = Tier::hbm;
  PoolKind first_kind_ = PoolKind::small;
  bool mixed_ = false;             // both kinds counted: both_highest_ is kept
  std::array<Sums, 2> by_kind_{};  // indexed by PoolKind
  Amounts both_highest_{};         // of both kinds' summed net since the last fold
};

}  // namespace npumem::core
