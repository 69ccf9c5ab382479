// A lone thread's allocations and frees (its front cache's kept blocks and the
// locked path's alike, while nothing else needs the statistics), counted here instead
// of in the nine statistics each touches (three counters, each in its all, kind and
// tier splits), and folded into them before anything reads them or changes them
// otherwise. Peaks stay exact: between folds nothing else changes those statistics,
// so the highest value each reached is its value at the last fold plus the highest
// running sum of the changes since. One pool and one tier at a time (the all and tier
// splits then change alike); both kinds.
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
  }
  // Written out per counter, here and in fold_into: these run on every call.
  void allocated(const Block& block) {
    Sums& kind = by_kind_[static_cast<std::size_t>(block.segment->kind)];
    add(kind, common_, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    add(kind, common_, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    add(kind, common_, kAllocations, 1);
  }
  void freed(const Block& block) {
    Sums& kind = by_kind_[static_cast<std::size_t>(block.segment->kind)];
    subtract(kind, common_, kAllocatedBytes, static_cast<std::int64_t>(block.size));
    subtract(kind, common_, kRequestedBytes, static_cast<std::int64_t>(block.requested));
    subtract(kind, common_, kAllocations, 1);
  }
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
  // The all and tier splits change by the sum of the kinds' changes: their added
  // and net are the kinds' summed, their highest running sum is kept.
  struct CommonSums {
    Amounts net{};
    Amounts highest{};
  };

  static void add(Sums& kind, CommonSums& common, Counter c, std::int64_t amount) {
    kind.added[c] += amount;
    kind.net[c] += amount;
    kind.highest[c] = std::max(kind.highest[c], kind.net[c]);
    common.net[c] += amount;
    common.highest[c] = std::max(common.highest[c], common.net[c]);
  }
  static void subtract(Sums& kind, CommonSums& common, Counter c, std::int64_t amount) {
    kind.net[c] -= amount;
    common.net[c] -= amount;
  }
  void fold_into(StatSplit& split, Counter c) const {
    const std::int64_t added = by_kind_[0].added[c] + by_kind_[1].added[c];
    fold_into(split.all, added, common_.net[c], common_.highest[c]);
    fold_into(split.by_tier[static_cast<std::size_t>(tier_)], added, common_.net[c],
              common_.highest[c]);
    for (std::size_t kind = 0; kind < by_kind_.size(); ++kind) {
      const Sums& sums = by_kind_[kind];
      fold_into(split.by_kind[kind], sums.added[c], sums.net[c], sums.highest[c]);
    }
  }
  static void fold_into(Stat& stat, std::int64_t added, std::int64_t net, std::int64_t highest) {
    stat.peak = std::max(stat.peak, stat.current + highest);
    stat.current += net;
    stat.allocated += added;
    stat.freed += added - net;
  }

  PoolState* pool_ = nullptr;  // nullptr: nothing counted since the last fold
  Tier tier_ = Tier::hbm;
  std::array<Sums, 2> by_kind_{};  // indexed by PoolKind
  CommonSums common_{};
};

}  // namespace npumem::core
