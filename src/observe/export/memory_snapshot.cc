#include <chrono>

#include "npumem/snapshot.h"

namespace npumem {

MemorySnapshot memory_snapshot(const Allocator& allocator, const HistoryRecorder* history) {
  MemorySnapshot snapshot;
  snapshot.device_name = allocator.device().name();
  for (const Tier tier : kAllTiers) {
    snapshot.tiers[static_cast<std::size_t>(tier)] = allocator.device().tier_info(tier);
  }
  snapshot.config = to_string(allocator.config());
  snapshot.time_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  snapshot.stats = allocator.stats();
  snapshot.pools = allocator.pools();
  snapshot.segments = allocator.snapshot();
  if (history != nullptr) {
    snapshot.history.recorded = true;
    snapshot.history.max_entries = history->options().max_entries;
    snapshot.history.entries = history->entries();
    // The first kept entry's number is how many came before it and were dropped.
    if (!snapshot.history.entries.empty()) {
      snapshot.history.dropped = snapshot.history.entries.front().sequence;
    }
    snapshot.history.start_unix_ns = history->start_unix_ns();
  }
  return snapshot;
}

}  // namespace npumem
