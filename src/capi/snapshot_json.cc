#include "capi/snapshot_json.h"

#include "capi/json_writer.h"

namespace npumem::capi {
namespace {

std::string_view kind_name(PoolKind kind) {
  return kind == PoolKind::small ? "small" : "large";
}

void write_block(JsonWriter& json, const BlockInfo& block) {
  json.begin_object();
  json.key("address").number(block.address);
  json.key("size").number(block.size);
  json.key("requested_bytes").number(block.requested_bytes);
  json.key("allocated").boolean(block.allocated);
  json.key("tag").string(block.tag);
  json.end_object();
}

void write_segment(JsonWriter& json, const SegmentInfo& segment) {
  json.begin_object();
  json.key("address").number(segment.address);
  json.key("size").number(segment.size);
  json.key("tier").string(tier_name(segment.tier));
  json.key("kind").string(kind_name(segment.kind));
  json.key("pool").string(segment.pool);
  json.key("blocks").begin_array();
  for (const BlockInfo& block : segment.blocks) write_block(json, block);
  json.end_array();
  json.end_object();
}

}  // namespace

std::string snapshot_json(const Allocator& allocator) {
  JsonWriter json;
  json.begin_object();
  json.key("device").string(allocator.device().name());
  json.key("config").string(to_string(allocator.config()));
  json.key("segments").begin_array();
  for (const SegmentInfo& segment : allocator.snapshot()) write_segment(json, segment);
  json.end_array();
  json.key("pools").begin_array();
  for (const PoolInfo& pool : allocator.pools()) {
    json.begin_object();
    json.key("name").string(pool.name);
    json.key("quota_bytes").number(pool.quota_bytes);
    json.end_object();
  }
  json.end_array();
  json.key("stats").begin_object();
  for (const auto& [key, value] : allocator.stats().as_map()) json.key(key).number(value);
  json.end_object();
  json.end_object();
  return json.text();
}

}  // namespace npumem::capi
