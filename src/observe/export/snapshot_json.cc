#include "npumem/snapshot.h"
#include "observe/export/json_writer.h"
#include "observe/watch/backtrace.h"

namespace npumem {
namespace {

using observe::JsonWriter;

void write_stats(JsonWriter& json, const Stats& stats) {
  json.begin_object();
  for (const auto& [name, value] : stats.as_map()) json.field(name, value);
  json.end_object();
}

void write_device(JsonWriter& json, const MemorySnapshot& snapshot) {
  json.begin_object().field("name", snapshot.device_name).key("tiers").begin_array();
  for (const TierInfo& tier : snapshot.tiers) {
    json.begin_object()
        .field("tier", tier_name(tier.tier))
        .field("present", tier.present)
        .field("capacity_bytes", tier.capacity_bytes)
        .field("used_bytes", tier.used_bytes)
        .field("bandwidth_bytes_per_s", tier.bandwidth_bytes_per_s)
        .field("granularity_bytes", tier.granularity_bytes)
        .end_object();
  }
  json.end_array().end_object();
}

void write_pools(JsonWriter& json, const std::vector<PoolInfo>& pools) {
  json.begin_array();
  for (const PoolInfo& pool : pools) {
    json.begin_object().field("name", pool.name).field("quota_bytes", pool.quota_bytes);
    if (pool.tier) json.field("tier", tier_name(*pool.tier));  // pinned
    write_stats(json.key("stats"), pool.stats);
    json.end_object();
  }
  json.end_array();
}

void write_segments(JsonWriter& json, const std::vector<SegmentInfo>& segments) {
  json.begin_array();
  for (const SegmentInfo& segment : segments) {
    json.begin_object()
        .field("address", segment.address)
        .field("size", segment.size)
        .field("tier", tier_name(segment.tier))
        .field("kind", segment.kind == PoolKind::small ? "small" : "large")
        .field("pool", segment.pool)
        .key("blocks")
        .begin_array();
    for (const BlockInfo& block : segment.blocks) {
      json.begin_object()
          .field("address", block.address)
          .field("size", block.size)
          .field("requested_bytes", block.requested_bytes)
          .field("state", block.allocated ? "allocated"
                          : block.mapped  ? "free"
                                          : "unmapped")
          .field("tag", block.tag)
          .end_object();
    }
    json.end_array().end_object();
  }
  json.end_array();
}

void write_entry(JsonWriter& json, const HistoryEntry& entry, observe::FrameNames& frame_names) {
  json.begin_object()
      .field("seq", entry.sequence)
      .field("time_ns", entry.time_ns)
      .field("kind", event_kind_name(entry.kind))
      .field("tier", tier_name(entry.tier))
      .field("address", entry.address)
      .field("bytes", entry.bytes)
      .field("requested_bytes", entry.requested_bytes)
      .field("pool", entry.pool)
      .field("tag", entry.tag)
      .field("tier_allocated_bytes", entry.tier_allocated_bytes)
      .field("tier_reserved_bytes", entry.tier_reserved_bytes);
  if (!entry.frames.empty()) {
    json.key("frames").begin_array();
    for (const void* frame : entry.frames) json.value(frame_names(frame));
    json.end_array();
  }
  json.end_object();
}

void write_history(JsonWriter& json, const HistoryRecord& history) {
  json.begin_object()
      .field("recorded", history.recorded)
      .field("max_entries", history.max_entries)
      .field("dropped", history.dropped)
      .field("start_unix_ns", history.start_unix_ns)
      .key("entries")
      .begin_array();
  observe::FrameNames frame_names;
  for (const HistoryEntry& entry : history.entries) write_entry(json, entry, frame_names);
  json.end_array().end_object();
}

}  // namespace

void write_snapshot_json(const MemorySnapshot& snapshot, std::ostream& out) {
  JsonWriter json(out);
  json.begin_object()
      .field("format", "npumem.snapshot")
      .field("version", kSnapshotVersion)
      .field("time_unix_ns", snapshot.time_unix_ns)
      .field("config", snapshot.config);
  write_device(json.key("device"), snapshot);
  write_stats(json.key("stats"), snapshot.stats);
  write_pools(json.key("pools"), snapshot.pools);
  write_segments(json.key("segments"), snapshot.segments);
  write_history(json.key("history"), snapshot.history);
  json.end_object();
  out << "\n";
}

}  // namespace npumem
