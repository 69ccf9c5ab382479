// Statistics with PyTorch's names and meaning (torch.cuda.memory_stats), split by
// pool kind (all, small_pool, large_pool) and by tier (hbm, ddr).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "npumem/device.h"

namespace npumem {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;  // total ever added
  std::int64_t freed = 0;      // total ever removed

  void increase(std::int64_t amount) {
    current += amount;
    allocated += amount;
    if (current > peak) peak = current;
  }
  void decrease(std::int64_t amount) {
    current -= amount;
    freed += amount;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() {
    allocated = 0;
    freed = 0;
  }
};

// Copies between tiers (Allocator::copy), one direction: how many, the bytes, and the
// transfer time of the device's bandwidth model.
struct CopyStat {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  double modelled_seconds = 0;

  void add(std::uint64_t amount, double seconds) {
    ++count;
    bytes += static_cast<std::int64_t>(amount);
    modelled_seconds += seconds;
  }
};

enum class PoolKind : std::uint8_t { small = 0, large = 1 };

// One statistic seen by every split: all, small_pool, large_pool, hbm, ddr.
struct StatSplit {
  Stat all;
  std::array<Stat, 2> by_kind;           // indexed by PoolKind
  std::array<Stat, kTierCount> by_tier;  // indexed by Tier

  void increase(PoolKind kind, Tier tier, std::int64_t amount) {
    all.increase(amount);
    by_kind[static_cast<int>(kind)].increase(amount);
    by_tier[static_cast<int>(tier)].increase(amount);
  }
  void decrease(PoolKind kind, Tier tier, std::int64_t amount) {
    all.decrease(amount);
    by_kind[static_cast<int>(kind)].decrease(amount);
    by_tier[static_cast<int>(tier)].decrease(amount);
  }
  void reset_peak();
  void reset_accumulated();
  void keep_higher_peaks(const StatSplit& other);
};

struct Stats {
  StatSplit allocated_bytes;  // bytes in blocks handed out (rounded sizes)
  StatSplit active_bytes;     // same as allocated: blocks held for stream events count as freed
  StatSplit requested_bytes;  // bytes the callers asked for
  StatSplit reserved_bytes;   // bytes held from the device
  StatSplit allocation;       // count of blocks handed out
  StatSplit active;           // count of active blocks
  StatSplit segment;          // count of segments (or mapped ranges)
  // Free mapped blocks sharing their segment with other blocks: cached memory that
  // empty_cache() cannot release (PyTorch's inactive_split; in an expandable range it
  // unmaps their whole granules, as PyTorch's expandable segments do). Read through
  // Allocator::stats(), blocks threads' front caches kept are back in their pools
  // first. As in PyTorch, their allocated and freed add each operation's net change (a
  // take from a split block's tail adds none).
  StatSplit inactive_split;
  StatSplit inactive_split_bytes;
  // Allocations and segments of at least max_split_size bytes (never split).
  Stat oversize_allocations;
  Stat oversize_segments;

  // Allocations that needed a reclaim first: its release made the room they took.
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  std::int64_t num_device_alloc = 0;  // device segment/chunk creations
  std::int64_t num_device_free = 0;
  std::int64_t num_spills = 0;  // allocations served by DDR because HBM could not
  // Cache releases made for a request: after a refusal, and before a growth past the
  // reserved high-water mark (so the reserved peak follows the live one), which makes
  // them routine, not a sign of pressure.
  std::int64_t num_reclaims = 0;
  // [from][to] by Tier; not reset with the peaks.
  std::array<std::array<CopyStat, kTierCount>, kTierCount> copies{};
  // The max_split_size setting, -1 when unset (PyTorch prints SIZE_MAX so).
  std::int64_t max_split_size = -1;

  void reset_peak();
  // Each peak becomes the higher of its own and `other`'s.
  void keep_higher_peaks(const Stats& other);
  // Zeroes what accumulates (each statistic's allocated and freed, the num_ counts);
  // current values and peaks stay (torch.cuda.reset_accumulated_memory_stats).
  void reset_accumulated();
  // Flat "name.split.field" keys as torch.cuda.memory_stats() prints them,
  // e.g. "allocated_bytes.all.current", "reserved_bytes.hbm.peak", "num_ooms", and per
  // copy direction "num_copies.ddr_to_hbm", "copy_bytes.ddr_to_hbm",
  // "copy_modelled_ns.ddr_to_hbm" (the modelled seconds in nanoseconds).
  std::map<std::string, std::int64_t> as_map() const;

 private:
  // Every StatSplit above, of `stats` (a Stats or a const Stats).
  template <typename Self>
  static auto splits(Self& stats);
};

}  // namespace npumem
