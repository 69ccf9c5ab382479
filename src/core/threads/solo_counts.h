// A lone thread's allocations and frees (its front cache's kept blocks and the
// locked path's alike, while nothing else needs the statistics), counted here instead
// of in the nine statistics each touches (three counters, each in its all, kind and
// tier splits), and folded into them before anything reads them or changes them
// otherwise. Peaks stay exact: between folds nothing else changes those statistics,
// so the highest value each reached is its value at the last fold plus the highest
// running sum of the changes since. One pool and tier at a time, so the all and tier
// splits change by the kinds' sum: that sum is kept running beside each kind's, and
// so is its highest.
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
    return counts_like(block.segment->pool, block.segment->tier);
  }
  // Likewise for a block of `pool` and `tier`.
  bool counts_like(const PoolState* pool, Tier tier) const {
    return pool == pool_ && tier == tier_;
  }
  void start(const Block& block) {
    pool_ = block.segment->pool;
    tier_ = block.segment->tier;
  }
  // Written out per counter, here and in fold_into: these run on every call, inline in
  // a lone thread's way, which calls nothing (Allocator::Impl::allocate).
  [[gnu::always_inline]] void allocated(const Block& block) {
    Sums& kind = by_kind_[static_cast<std::size_t>(block.segment->kind)];
    add(kind, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    add(kind, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    add(kind, kAllocations, 1);
  }
  [[gnu::always_inline]] void freed(const Block& block) {
    Sums& kind = by_kind_[static_cast<std::size_t>(block.segment->kind)];
    subtract(kind, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    subtract(kind, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    subtract(kind, kAllocations, 1);
  }
  // The requested bytes allocated less those freed since the last fold.
  std::int64_t requested_net() const { return both_net_[kRequestedBytes]; }
  // The pool whose statistics (beside the allocator's) the counts are for.
  PoolState* pool() const { return pool_; }
  // Adds the counts to `stats` (the allocator's, then the pool's when kept apart);
  // clear() after.
  void fold_into(Stats& stats) const {
    fold_into(stats.allocated_bytes, kAllocatedBytes);
    fold_into(stats.requested_bytes, kRequestedBytes);
    fold_into(stats.allocation, kAllocations);
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

  // A new highest is rare once a workload runs steadily: a branch, not a store.
  static void raise(std::int64_t& highest, std::int64_t value) {
    if (value > highest) [[unlikely]] {
      highest = value;
    }
  }
  void add(Sums& kind, Counter c, std::int64_t amount) {
    kind.added[c] += amount;
    kind.net[c] += amount;
    raise(kind.highest[c], kind.net[c]);
    both_net_[c] += amount;
    raise(both_highest_[c], both_net_[c]);
  }
  void subtract(Sums& kind, Counter c, std::int64_t amount) {
    kind.net[c] -= amount;
    both_net_[c] -= amount;
  }
  void fold_into(StatSplit& split, Counter c) const {
    Sums both;
    both.added[c] = by_kind_[0].added[c] + by_kind_[1].added[c];
    both.net[c] = both_net_[c];
    both.highest[c] = both_highest_[c];
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
  std::array<Sums, 2> by_kind_{};  // indexed by PoolKind
  Amounts both_net_{};             // the kinds' nets summed
  Amounts both_highest_{};         // of both_net_ since the last fold (0 at it)
};

}  // namespace npumem::core
