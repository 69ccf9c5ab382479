// Seeing memory at chosen moments: labelled snapshots and their report (the
// NpuMemoryMonitor of the seeds), a PyTorch-style summary table, and a cache
// release that says what it gave back (the seeds' defragment step).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/device.h"

namespace npumem {

struct TierUsage {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
};

struct LabelledSnapshot {
  std::string label;
  std::chrono::system_clock::time_point time;
  TierUsage total;                          // every tier together
  std::array<TierUsage, kTierCount> tiers;  // indexed by Tier
};

// What Allocator::empty_cache() gave back, with the figures before and after.
struct CacheRelease {
  std::uint64_t released_bytes = 0;
  TierUsage before;
  TierUsage after;
  // Fragmentation (1 - largest free block / free reserved bytes) per tier.
  std::array<double, kTierCount> fragmentation_before{};
  std::array<double, kTierCount> fragmentation_after{};
};

// A table like torch.cuda.memory_summary(): current, peak, total allocated and
// total freed of allocated / active / requested / reserved memory and of the
// allocation, active and segment counts, split by pool kind and tier, then one
// section per named pool, headed by the OOM, retry, spill and reclaim counts; under
// the planned strategy, then the planned report (planned_report.h), whose reason no
// plan served names `marks`, how the caller marks iterations.
std::string memory_summary(const Allocator& allocator,
                           std::string_view marks = "mark_iteration() (npumem_iteration() in C)");

// Releases every cached free segment (Allocator::empty_cache) and reports it.
CacheRelease release_cache(Allocator& allocator);
// "before: allocated .., reserved .." / "after: .." / "released: .." and the
// fragmentation of each tier, before -> after.
std::string to_string(const CacheRelease& release);

// Takes labelled snapshots of one allocator and prints them as the seeds' report.
// Not thread-safe: one thread drives a monitor.
class Monitor {
 public:
  explicit Monitor(Allocator& allocator) : allocator_(allocator) {}

  // A copy: the snapshot stays valid whatever is taken next.
  LabelledSnapshot snapshot(std::string label);
  const std::vector<LabelledSnapshot>& snapshots() const { return snapshots_; }
  // One row per snapshot: label, allocated, reserved, peak (allocated), seconds
  // since the first snapshot; "no snapshots" when there are none.
  std::string report() const;
  std::string memory_summary() const { return npumem::memory_summary(allocator_); }
  CacheRelease empty_cache() { return release_cache(allocator_); }

 private:
  Allocator& allocator_;
  std::vector<LabelledSnapshot> snapshots_;
};

}  // namespace npumem
