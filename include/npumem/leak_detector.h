// Leak detection (the seeds' MemoryLeakDetector, and more): marks a baseline,
// counts iterations, judges the growth of allocated bytes against a threshold, and
// names the allocations made since the baseline that are still alive, grouped by
// tag, pool and backtrace. An observer of the allocator.
#pragma once

#include <cstddef>
#include <cstdint>
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

struct LeakOptions {
  double threshold = 0.10;  // growth of allocated bytes that counts as a leak (10 %)
  bool backtraces = false;  // group survivors by the allocating stack too
  std::size_t max_frames = 16;
};

// Live allocations made since the baseline that share a tag, pool and backtrace.
struct LeakGroup {
  std::string tag;
  std::string pool;
  std::vector<std::string> frames;  // described, innermost first
  std::size_t count = 0;
  std::uint64_t bytes = 0;  // block bytes held
  std::uint64_t requested_bytes = 0;
  std::size_t iterations = 0;  // how many distinct iterations left survivors here
  std::size_t first_iteration = 0;
  std::size_t last_iteration = 0;
  bool recurring = false;  // survivors from at least half the iterations (and two)
};

struct LeakReport {
  std::size_t iterations = 0;  // tick()s since the baseline
  std::uint64_t baseline_bytes = 0;
  std::uint64_t final_bytes = 0;
  double growth = 0.0;  // (final - baseline) / baseline; +inf from a zero baseline
  double threshold = 0.10;
  bool leaking = false;                // growth above the threshold
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
  // Ends an iteration: samples allocated bytes.
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

  const LeakOptions options_;
  mutable std::mutex mutex_;
  std::uint64_t baseline_bytes_ = 0;
  std::uint64_t allocated_bytes_ = 0;
  std::size_t iteration_ = 0;
  std::vector<std::uint64_t> samples_;
  std::unordered_map<std::uint64_t, Allocation> live_;  // by address, since the baseline
  std::map<GroupKey, std::uint32_t> group_ids_;
  std::vector<const GroupKey*> groups_;
  std::uint32_t last_group_ = 0;  // valid once groups_ is not empty
};

// The seeds' lines (baseline, final, growth, verdict) and the survivor groups.
std::string to_string(const LeakReport& report);

}  // namespace npumem
