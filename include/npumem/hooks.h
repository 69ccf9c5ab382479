// Allocation hooks (the seeds' hook_allocation): callbacks for alloc, free, OOM and
// segment events, and a size-pattern analyser built on them. Callbacks run in the
// allocating thread under the allocator's lock: keep them quick and do not call
// the allocator from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "npumem/observer.h"

namespace npumem {

using HookCallback = std::function<void(const Event&)>;

class Hooks : public AllocatorObserver {
 public:
  using Id = std::uint64_t;

  // Calls `callback` for every event of the given kinds; returns an id for remove().
  Id add(std::initializer_list<EventKind> kinds, HookCallback callback);
  Id on_alloc(HookCallback callback) { return add({EventKind::alloc}, std::move(callback)); }
  Id on_free(HookCallback callback) { return add({EventKind::free}, std::move(callback)); }
  Id on_oom(HookCallback callback) { return add({EventKind::oom}, std::move(callback)); }
  // Segment allocations and frees, and page maps and unmaps.
  Id on_segment(HookCallback callback);
  // False when no hook has this id. A callback may remove hooks, itself included.
  bool remove(Id id);

  void on_event(const Event& event) override;

 private:
  struct Hook {
    Id id;
    std::uint32_t kinds;  // bit per EventKind
    HookCallback callback;
  };
  using HookList = std::vector<Hook>;

  mutable std::mutex mutex_;
  // Replaced, never changed in place: on_event calls a stable list without the lock.
  std::shared_ptr<const HookList> hooks_ = std::make_shared<const HookList>();
  Id next_id_ = 1;
};

struct SizePatterns {
  std::uint64_t allocations = 0;
  std::size_t distinct_sizes = 0;
  // Power-of-two buckets: (upper bound in bytes, allocations of at most that size
  // and more than the previous bound).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> most_frequent;  // (size, count)
  // Per iteration after the first: the share of its requests whose size the
  // previous iteration also requested (as many times); 1.0 is a repeating loop.
  // Iterations that requested nothing are left out.
  std::vector<double> repetition;
};

// Analyses requested sizes: a histogram, the most frequent sizes, and how much each
// iteration repeats the one before (a repeating loop can be planned statically).
class SizePatternAnalyser {
 public:
  // Counts every allocation the hooks see; the analyser must outlive the hook.
  Hooks::Id install(Hooks& hooks);
  void record(std::uint64_t requested_bytes);
  // Ends an iteration.
  void tick();
  SizePatterns patterns(std::size_t top = 10) const;

 private:
  using SizeCounts = std::map<std::uint64_t, std::uint64_t>;

  mutable std::mutex mutex_;
  SizeCounts totals_;
  SizeCounts current_;  // this iteration's sizes
  SizeCounts previous_;
  bool has_previous_ = false;
  std::uint64_t allocations_ = 0;
  std::vector<double> repetition_;
};

std::string to_string(const SizePatterns& patterns);

}  // namespace npumem
