// A pool: its own block pools per tier and kind, its quota and its statistics.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/pool/block_pool.h"
#include "npumem/stats.h"

namespace npumem::core {

struct PoolState {
  // `totals`: the allocator's statistics, which the block pools count into too.
  PoolState(std::string pool_name, std::uint64_t quota, Stats* totals,
            std::optional<Tier> tier = std::nullopt)
      : name(std::move(pool_name)), quota_bytes(quota), pinned_tier(tier) {
    for (Tier tier : kAllTiers) {
      for (PoolKind kind : {PoolKind::small, PoolKind::large}) {
        blocks[static_cast<int>(tier)][static_cast<int>(kind)] =
            std::make_unique<BlockPool>(tier, kind, this, totals);
      }
    }
  }
  BlockPool& block_pool(Tier tier, PoolKind kind) {
    return *blocks[static_cast<int>(tier)][static_cast<int>(kind)];
  }
  const BlockPool& block_pool(Tier tier, PoolKind kind) const {
    return *blocks[static_cast<int>(tier)][static_cast<int>(kind)];
  }
  std::uint64_t reserved_bytes() const {
    return static_cast<std::uint64_t>(stats.reserved_bytes.all.current);
  }

  std::string name;
  std::uint64_t quota_bytes;        // 0: no quota
  std::optional<Tier> pinned_tier;  // set: allocations come only from this tier
  Stats stats;                      // before blocks: they count into it until destroyed
  // Whether `stats` are the pool's own: false for the allocator's first pool until a
  // second exists (its statistics are the totals then, copied when it comes), so its
  // block pools count their inactive splits once, in the totals.
  bool own_stats = true;
  // PoolScopes routing to it, on any thread: a pool in use is not removed. Changed
  // under the allocator's lock on entry, read under it by remove_pool.
  std::atomic<int> scopes{0};
  std::array<std::array<std::unique_ptr<BlockPool>, 2>, kTierCount> blocks;
};

}  // namespace npumem::core
