#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "npumem/snapshot.h"
#include "npumem/units.h"

namespace npumem {
namespace {

nlohmann::json as_json(const MemorySnapshot& snapshot) {
  std::ostringstream out;
  write_snapshot_json(snapshot, out);
  return nlohmann::json::parse(out.str());
}

TEST(SnapshotJson, FollowsTheDocumentedSchema) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=32MiB"));
  auto recorder = record_history(allocator);
  void* p = nullptr;
  {
    ScopedMemoryTag tag("layer \"1\"");
    p = allocator.allocate(3000);
  }
  const nlohmann::json json = as_json(memory_snapshot(allocator, recorder.get()));

  EXPECT_EQ(json.at("format"), "npumem.snapshot");
  EXPECT_EQ(json.at("version"), kSnapshotVersion);
  EXPECT_GT(json.at("time_unix_ns").get<std::int64_t>(), 0);
  EXPECT_EQ(json.at("config"), to_string(allocator.config()));
  EXPECT_EQ(json.at("device").at("name"), "sim:0");
  EXPECT_EQ(json.at("device").at("tiers").at(1).at("tier"), "ddr");
  EXPECT_EQ(json.at("device").at("tiers").at(1).at("capacity_bytes"), 32 * MiB);
  EXPECT_EQ(json.at("stats").at("allocated_bytes.all.current"), 3072);
  EXPECT_EQ(json.at("pools").at(0).at("name"), "default");
  EXPECT_EQ(json.at("pools").at(0).at("stats").at("requested_bytes.all.current"), 3000);
  EXPECT_FALSE(json.at("pools").at(0).contains("tier")) << "not pinned";

  const auto& segment = json.at("segments").at(0);
  EXPECT_EQ(segment.at("tier"), "hbm");
  EXPECT_EQ(segment.at("kind"), "small");
  EXPECT_EQ(segment.at("pool"), "default");
  EXPECT_EQ(segment.at("size"), 2 * MiB);
  const auto& block = segment.at("blocks").at(0);
  EXPECT_EQ(block.at("address"), reinterpret_cast<std::uint64_t>(p));
  EXPECT_EQ(block.at("size"), 3072);
  EXPECT_EQ(block.at("requested_bytes"), 3000);
  EXPECT_EQ(block.at("state"), "allocated");
  EXPECT_EQ(block.at("tag"), "layer \"1\"");
  EXPECT_EQ(segment.at("blocks").at(1).at("state"), "free");

  const auto& history = json.at("history");
  EXPECT_EQ(history.at("recorded"), true);
  EXPECT_EQ(history.at("dropped"), 0);
  const auto& entry = history.at("entries").at(1);
  EXPECT_EQ(entry.at("seq"), 1);
  EXPECT_EQ(entry.at("kind"), "alloc");
  EXPECT_EQ(entry.at("tier"), "hbm");
  EXPECT_EQ(entry.at("bytes"), 3072);
  EXPECT_EQ(entry.at("requested_bytes"), 3000);
  EXPECT_EQ(entry.at("pool"), "default");
  EXPECT_EQ(entry.at("tag"), "layer \"1\"");
  EXPECT_EQ(entry.at("tier_allocated_bytes"), 3072);
  EXPECT_EQ(entry.at("tier_reserved_bytes"), 2 * MiB);
  EXPECT_TRUE(entry.contains("time_ns"));
  EXPECT_FALSE(entry.contains("frames"));
  allocator.deallocate(p);
}

TEST(SnapshotJson, WritesBacktracesAsDescribedFrames) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator, {.backtraces = true, .max_frames = 3});
  allocator.deallocate(allocator.allocate(512));
  const nlohmann::json json = as_json(memory_snapshot(allocator, recorder.get()));
  const auto& frames = json.at("history").at("entries").at(1).at("frames");
  ASSERT_TRUE(frames.is_array());
  EXPECT_GE(frames.size(), 1u);
  EXPECT_NE(frames.at(0).get<std::string>().find("+0x"), std::string::npos);
}

// An expandable range's address space without memory is not free cached memory.
TEST(SnapshotJson, AnExpandableRangesUnmappedSpaceIsUnmapped) {
  Config config;
  config.strategy = Strategy::expandable;
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"), config);
  void* freed = allocator.allocate(4 * MiB);   // granules 0 and 1
  void* kept = allocator.allocate(512 * KiB);  // granule 2 keeps the range
  allocator.deallocate(freed);
  allocator.empty_cache();
  const nlohmann::json json = as_json(memory_snapshot(allocator));
  ASSERT_EQ(json.at("segments").size(), 1u);
  std::map<std::string, std::uint64_t> bytes_by_state;
  for (const auto& block : json.at("segments").at(0).at("blocks")) {
    bytes_by_state[block.at("state")] += block.at("size").get<std::uint64_t>();
  }
  EXPECT_GE(bytes_by_state["unmapped"], 4 * MiB);
  EXPECT_EQ(bytes_by_state["allocated"], 512 * KiB);
  EXPECT_EQ(bytes_by_state["free"], 1536 * KiB) << "the rest of granule 2 only";
  EXPECT_EQ(json.at("stats").at("reserved_bytes.all.current"), 2 * MiB);
  allocator.deallocate(kept);
}

TEST(SnapshotJson, APinnedPoolNamesItsTier) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=32MiB"));
  allocator.create_pool("weights", 0, Tier::ddr);
  const nlohmann::json json = as_json(memory_snapshot(allocator, nullptr));
  EXPECT_EQ(json.at("pools").at(1).at("name"), "weights");
  EXPECT_EQ(json.at("pools").at(1).at("tier"), "ddr");
}

TEST(SnapshotJson, WithoutHistorySaysSo) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  const nlohmann::json json = as_json(memory_snapshot(allocator));
  EXPECT_EQ(json.at("history").at("recorded"), false);
  EXPECT_TRUE(json.at("history").at("entries").empty());
  EXPECT_TRUE(json.at("segments").empty());
}

}  // namespace
}  // namespace npumem
