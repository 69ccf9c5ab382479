#include "npumem/snapshot.h"
#include "observe/export/json_writer.h"

namespace npumem {
namespace {

using observe::JsonWriter;

constexpr std::int64_t kPid = 1;  // one process per file: the allocator

double microseconds(std::uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

bool changes_totals(EventKind kind) {
  return kind == EventKind::alloc || kind == EventKind::free || kind == EventKind::segment_alloc ||
         kind == EventKind::segment_free || kind == EventKind::map || kind == EventKind::unmap;
}

bool is_instant(EventKind kind) {
  return kind == EventKind::oom || kind == EventKind::reclaim || kind == EventKind::spill;
}

void write_metadata(JsonWriter& json, const MemorySnapshot& snapshot) {
  json.begin_object()
      .field("ph", "M")
      .field("name", "process_name")
      .field("pid", kPid)
      .field("tid", 0)
      .key("args")
      .begin_object()
      .field("name", "npumem " + snapshot.device_name)
      .end_object()
      .end_object();
}

// One sample of a tier's counter track: allocated and reserved bytes.
void write_counter(JsonWriter& json, Tier tier, double ts, std::uint64_t allocated,
                   std::uint64_t reserved) {
  json.begin_object()
      .field("ph", "C")
      .field("name", std::string(tier_name(tier)) + " memory")
      .field("pid", kPid)
      .field("tid", 0)
      .field("ts", ts)
      .key("args")
      .begin_object()
      .field("allocated", allocated)
      .field("reserved", reserved)
      .end_object()
      .end_object();
}

void write_instant(JsonWriter& json, const HistoryEntry& entry) {
  json.begin_object()
      .field("ph", "i")
      .field("s", "p")
      .field("name", event_kind_name(entry.kind))
      .field("pid", kPid)
      .field("tid", 0)
      .field("ts", microseconds(entry.time_ns))
      .key("args")
      .begin_object()
      .field("tier", tier_name(entry.tier))
      .field("bytes", entry.bytes)
      .field("requested_bytes", entry.requested_bytes)
      .field("pool", entry.pool)
      .field("tag", entry.tag)
      .end_object()
      .end_object();
}

// Without history there is one sample per tier: the totals at snapshot time.
void write_current_totals(JsonWriter& json, const MemorySnapshot& snapshot) {
  for (const Tier tier : kAllTiers) {
    if (!snapshot.tiers[static_cast<std::size_t>(tier)].present) continue;
    const auto index = static_cast<std::size_t>(tier);
    write_counter(json, tier, 0.0,
                  static_cast<std::uint64_t>(snapshot.stats.allocated_bytes.by_tier[index].current),
                  static_cast<std::uint64_t>(snapshot.stats.reserved_bytes.by_tier[index].current));
  }
}

}  // namespace

void write_chrome_trace(const MemorySnapshot& snapshot, std::ostream& out) {
  JsonWriter json(out);
  json.begin_object().field("displayTimeUnit", "ns").key("traceEvents").begin_array();
  write_metadata(json, snapshot);
  if (!snapshot.history.recorded) write_current_totals(json, snapshot);
  for (const HistoryEntry& entry : snapshot.history.entries) {
    if (changes_totals(entry.kind)) {
      write_counter(json, entry.tier, microseconds(entry.time_ns), entry.tier_allocated_bytes,
                    entry.tier_reserved_bytes);
    } else if (is_instant(entry.kind)) {
      write_instant(json, entry);
    }
  }
  json.end_array().end_object();
  out << "\n";
}

}  // namespace npumem
