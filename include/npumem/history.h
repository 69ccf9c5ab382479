// History recording (like torch.cuda.memory._record_memory_history): a ring buffer
// of the allocator's events with time, sizes, tier, pool, the caller's memory tag
// and optionally a native backtrace. An observer: when not attached it costs the
// allocator nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/observer.h"

namespace npumem {

struct HistoryOptions {
  // The oldest entries are dropped beyond it; at most 10^9. Memory grows with the
  // entries recorded, not with this bound.
  std::size_t max_entries = 100'000;
  bool backtraces = false;      // capture the allocating thread's native stack
  std::size_t max_frames = 16;  // per backtrace, at most 64
};

struct HistoryEntry {
  std::uint64_t sequence = 0;  // the event's number since recording began
  std::uint64_t time_ns = 0;   // since recording began (steady clock)
  EventKind kind = EventKind::alloc;
  Tier tier = Tier::hbm;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t requested_bytes = 0;
  std::string pool;
  std::string tag;
  // The tier's allocated and reserved bytes after the event: counter tracks need
  // no replay of the history, and survive entries the ring has dropped.
  std::uint64_t tier_allocated_bytes = 0;
  std::uint64_t tier_reserved_bytes = 0;
  std::vector<const void*> frames;  // innermost first; empty without backtraces
};

class HistoryRecorder : public AllocatorObserver {
 public:
  // `baseline`: the allocator's stats when recording starts, so that the tier
  // totals carried by each entry start from the truth. Throws ConfigError for
  // max_entries 0 or max_frames above 64.
  explicit HistoryRecorder(HistoryOptions options = {}, const Stats& baseline = {});

  void on_event(const Event& event) override;

  // The entries kept, oldest first.
  std::vector<HistoryEntry> entries() const;
  std::uint64_t recorded() const;  // events seen
  std::uint64_t dropped() const;   // events the ring has overwritten
  const HistoryOptions& options() const { return options_; }
  // When recording began, as Unix time in nanoseconds.
  std::int64_t start_unix_ns() const { return start_unix_ns_; }

 private:
  // Compact ring slot: names interned, frames in their own ring.
  struct Slot {
    std::uint64_t time_ns;
    std::uint64_t address;
    std::uint64_t bytes;
    std::uint64_t requested_bytes;
    std::uint64_t tier_allocated_bytes;
    std::uint64_t tier_reserved_bytes;
    std::uint32_t pool;
    std::uint32_t tag;
    EventKind kind;
    Tier tier;
    std::uint16_t frame_count;
  };

  std::uint32_t intern_cached(std::string_view text, std::uint32_t& last);
  void update_totals(const Event& event);
  HistoryEntry expand(std::uint64_t sequence) const;

  const HistoryOptions options_;
  const std::int64_t start_unix_ns_;
  const std::int64_t start_steady_ns_;
  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<const void*> frames_;  // max_frames per slot when backtraces are on
  std::uint64_t recorded_ = 0;
  std::vector<std::string> names_;  // interned pool names and tags
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
  std::uint32_t last_pool_ = 0;
  std::uint32_t last_tag_ = 0;
  std::array<std::uint64_t, kTierCount> allocated_{};
  std::array<std::uint64_t, kTierCount> reserved_{};
};

// Starts recording `allocator`'s events: a recorder seeded with its current stats,
// attached as an observer. Stop with allocator.remove_observer(recorder).
std::shared_ptr<HistoryRecorder> record_history(Allocator& allocator, HistoryOptions options = {});

}  // namespace npumem
