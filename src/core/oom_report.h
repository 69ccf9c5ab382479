// The text of an out-of-memory error: what was asked, what each tier holds, why
// it could not be served, and one line of advice.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "npumem/device.h"

namespace npumem::core {

struct TierMemory {
  bool present = false;
  std::uint64_t capacity_bytes = 0;  // the device's
  std::uint64_t limit_bytes = 0;     // what this allocator may reserve
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t free_cached_bytes = 0;
  std::uint64_t largest_free_bytes = 0;
  double fragmentation = 0;
  // The granule this request's memory is mapped in here (expandable); 0: segments.
  std::uint64_t granule_bytes = 0;
};

// A pool beside the one that failed, for multi-model serving: who holds the memory.
struct PoolMemory {
  std::string name;
  std::uint64_t quota_bytes = 0;  // 0: none
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::array<std::uint64_t, kTierCount> reserved_by_tier{};  // indexed by Tier
};

struct OomContext {
  std::uint64_t requested_bytes = 0;
  std::uint64_t rounded_bytes = 0;
  bool past_largest_block = false;  // too large to round: rounded_bytes is the request
  std::string pool;
  std::optional<Tier> pinned_tier;  // the pool allocates from this tier only
  std::uint64_t pool_quota_bytes = 0;
  std::uint64_t pool_reserved_bytes = 0;
  std::uint64_t pool_allocated_bytes = 0;
  bool quota_refused = false;  // the pool's quota, not the device, stopped the growth
  // When it did: the reserved bytes its growth for this request would have brought the
  // pool to (0: not known).
  std::uint64_t pool_quota_needed_bytes = 0;
  bool arena_exhausted = false;  // the static arena is full and fallback is off
  // No virtual address range could be reserved (GrowResult::address_space_refused).
  bool address_space_refused = false;
  std::string strategy;
  bool max_split_size_set = false;  // blocks of that size or more are kept whole already
  // Under caching, the segment a request of the small kind grows by (0: large kind):
  // free space in large segments does not serve it.
  std::uint64_t small_segment_bytes = 0;
  bool spill_to_ddr = true;
  double memory_fraction = 1.0;  // of HBM's capacity (set_memory_fraction)
  std::array<TierMemory, kTierCount> tiers;
  std::string device_error;     // the driver's word on its last refusal (Device::last_error)
  std::string granule_setting;  // the config key of TierMemory::granule_bytes, when set
  // Every pool, the failing one too, when there is more than one; else empty.
  std::vector<PoolMemory> pools;
};

std::string explain_out_of_memory(const OomContext& context);

}  // namespace npumem::core
