// Leak detection (the seeds' MemoryLeakDetector, judged in steady state): counts
// iterations (tick(), or the allocator's EventKind::iteration from mark_iteration), and
// after a warm-up (the first step makes optimizer state, gradients and caches that
// legitimately stay) looks for allocations that stay alive iteration after iteration:
// a group (tag, pool, backtrace) that left survivors in half the judged iterations, or
// in three at least spread over them (a cache filled every few steps), is a leak. The iteration in
// progress is never judged (its tensors are in flight), and survivors are counted as they were at
// the last boundary (plus what came after it). An observer of the allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/observer.h"

namespace npumem {

// The caller's word on where the allocation at an address was made (Python's file and
// line, say), or "" when it has none: survivors are grouped by it too. Called with the
// detector's lock held, and the allocator's when a block is freed: it must not call
// into the allocator.
using LeakSiteOf = std::function<std::string(std::uint64_t address)>;

struct LeakOptions {
  // Recurring survivors above this fraction of the steady-state baseline are a leak
  // (0: any).
  double threshold = 0.0;
  bool backtraces = false;  // group survivors by the allocating stack too
  std::size_t max_frames = 16;
  // Iterations after the first boundary that are not judged (their survivors are
  // listed, never called a leak).
  std::size_t warmup_iterations = 1;
  // Asked for each survivor: when the report is made, or, for a block alive at the last
  // boundary and freed since (a leak held by a function that has returned), as it is
  // freed. Empty: no sites.
  LeakSiteOf site_of = nullptr;
};

// Live allocations made since the baseline that share a tag, pool and backtrace.
struct LeakGroup {
  std::string tag;
  std::string pool;
  std::vector<std::string> frames;  // described, innermost first
  // Where the caller's code made them (LeakOptions::site_of's, e.g. "train.py:42 in
  // step"); empty without one.
  std::string site;
  std::size_t count = 0;
  std::uint64_t bytes = 0;         // block bytes held
  std::uint64_t judged_bytes = 0;  // of those, made in judged iterations
  std::uint64_t requested_bytes = 0;
  std::size_t iterations = 0;  // how many distinct iterations left survivors here
  std::size_t first_iteration = 0;
  std::size_t last_iteration = 0;
  std::size_t judged_iterations = 0;  // of those, iterations after warm-up, before the last
  // Survivors from at least half the judged iterations, and from two at least; or from
  // three at least, the first in the first third of the judged iterations and the last
  // in the last third (a leak of every few steps: a cache with a new key every third).
  bool recurring = false;
};

struct LeakReport {
  std::size_t iterations = 0;  // boundaries (tick()s, iteration events) since the baseline
  std::size_t warmup_iterations = 1;
  std::size_t judged_iterations = 0;  // complete iterations after warm-up
  // Allocated bytes where the steady state starts (the first boundary after warm-up,
  // else the baseline) and at the last boundary.
  std::uint64_t baseline_bytes = 0;
  std::uint64_t final_bytes = 0;
  double growth = 0.0;  // (final - baseline) / baseline; +inf from a zero baseline
  double threshold = 0.0;
  // Held by recurring groups, made in judged iterations; the last judged iteration's
  // counted up to its group's usual amount per iteration (a tensor carried into the
  // iteration in progress, in the same group, does not read as a leak).
  std::uint64_t leaked_bytes = 0;
  // Held by the other groups, made in judged iterations before the last (whose tensors
  // may be carried into the one in progress: the last step's gradients), and how many
  // of those iterations left some: a leak too slow or too irregular to recur.
  std::uint64_t unrecurring_bytes = 0;
  std::size_t unrecurring_iterations = 0;
  // Recurring survivors above threshold x baseline (needs two judged iterations).
  bool leaking = false;
  std::vector<std::uint64_t> samples;  // allocated bytes at each tick
  std::vector<LeakGroup> survivors;    // most bytes first
};

class LeakDetector : public AllocatorObserver {
 public:
  // Throws ConfigError for a negative threshold or max_frames above 64.
  explicit LeakDetector(LeakOptions options = {});

  // Attaches a new detector to `allocator` and marks its baseline.
  static std::shared_ptr<LeakDetector> attach(Allocator& allocator, LeakOptions options = {});

  void on_event(const Event& event) override;

  // Starts over: allocated bytes now are the baseline; survivors are counted from here.
  void mark_baseline(const Allocator& allocator);
  // An iteration boundary: samples allocated bytes. The allocator's iteration events
  // (Allocator::mark_iteration) do the same.
  void tick();
  LeakReport report() const;

 private:
  struct Allocation {
    std::uint64_t bytes;
    std::uint64_t requested_bytes;
    std::size_t iteration;
    std::uint32_t group;
  };
  using GroupKey = std::tuple<std::string, std::string, std::vector<const void*>>;

  std::uint32_t group_of(const Event& event);
  void tick_locked();

  const LeakOptions options_;
  mutable std::mutex mutex_;
  std::uint64_t baseline_bytes_ = 0;
  std::uint64_t allocated_bytes_ = 0;
  std::size_t iteration_ = 0;
  std::vector<std::uint64_t> samples_;
  std::unordered_map<std::uint64_t, Allocation> live_;  // by address, since the baseline
  struct Freed {
    Allocation allocation;
    std::string site;  // options_.site_of's, asked as it was freed
  };
  std::vector<Freed> freed_since_boundary_;  // made before the last boundary, freed after
  std::map<GroupKey, std::uint32_t> group_ids_;
  std::vector<const GroupKey*> groups_;
  std::uint32_t last_group_ = 0;  // valid once groups_ is not empty
};

// The seeds' lines (baseline, final, growth, verdict) and the survivor groups.
std::string to_string(const LeakReport& report);

}  // namespace npumem
