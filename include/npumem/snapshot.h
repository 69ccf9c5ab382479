// The whole picture at one moment (like torch.cuda.memory._snapshot): the device,
// the stats, every pool, every segment with its blocks, and the recorded history.
// Exporters write it as JSON (schema in docs/OBSERVABILITY.md, read by `npumem viz`)
// and as a Chrome Trace Event file (Perfetto, chrome://tracing).
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/history.h"

namespace npumem {

inline constexpr int kSnapshotVersion = 1;

struct HistoryRecord {
  bool recorded = false;  // false when no recorder was given
  std::size_t max_entries = 0;
  std::uint64_t dropped = 0;
  std::int64_t start_unix_ns = 0;
  std::vector<HistoryEntry> entries;
};

struct MemorySnapshot {
  std::string device_name;
  std::array<TierInfo, kTierCount> tiers;  // indexed by Tier
  std::string config;                      // the allocator's settings as a config string
  std::int64_t time_unix_ns = 0;
  Stats stats;
  std::vector<PoolInfo> pools;
  std::vector<SegmentInfo> segments;  // in address order
  HistoryRecord history;
};

// Takes the allocator's state, and the recorder's entries when one is given.
MemorySnapshot memory_snapshot(const Allocator& allocator,
                               const HistoryRecorder* history = nullptr);

// The snapshot as one JSON object ("format": "npumem.snapshot").
void write_snapshot_json(const MemorySnapshot& snapshot, std::ostream& out);

// Chrome Trace Event format: counter tracks of allocated and reserved bytes per tier,
// instant events for OOMs, reclaims and spills, from the snapshot's history.
void write_chrome_trace(const MemorySnapshot& snapshot, std::ostream& out);

}  // namespace npumem
