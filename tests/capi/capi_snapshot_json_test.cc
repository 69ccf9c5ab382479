// npumem_snapshot_json: valid JSON (the observe layer's snapshot format) whose
// segments, blocks, pools and stats are the allocator's own, field for field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "capi/handle.h"
#include "npumem/npumem.h"
#include "npumem/observer.h"

namespace {

using nlohmann::json;

json snapshot_of(npumem_allocator_t* allocator) {
  char* text = nullptr;
  EXPECT_EQ(npumem_snapshot_json(allocator, &text), NPUMEM_OK) << npumem_last_error();
  if (text == nullptr) return {};
  json parsed = json::parse(text);
  npumem_string_free(text);
  return parsed;
}

void expect_matches(const json& block, const npumem::BlockInfo& info) {
  EXPECT_EQ(block.at("address").get<std::uint64_t>(), info.address);
  EXPECT_EQ(block.at("size").get<std::uint64_t>(), info.size);
  EXPECT_EQ(block.at("requested_bytes").get<std::uint64_t>(), info.requested_bytes);
  EXPECT_EQ(block.at("state").get<std::string>(), info.allocated ? "allocated" : "free");
  EXPECT_EQ(block.at("tag").get<std::string>(), info.tag);
}

void expect_matches(const json& segment, const npumem::SegmentInfo& info) {
  EXPECT_EQ(segment.at("address").get<std::uint64_t>(), info.address);
  EXPECT_EQ(segment.at("size").get<std::uint64_t>(), info.size);
  EXPECT_EQ(segment.at("tier").get<std::string>(), npumem::tier_name(info.tier));
  EXPECT_EQ(segment.at("kind").get<std::string>(),
            info.kind == npumem::PoolKind::small ? "small" : "large");
  EXPECT_EQ(segment.at("pool").get<std::string>(), info.pool);
  ASSERT_EQ(segment.at("blocks").size(), info.blocks.size());
  for (std::size_t i = 0; i < info.blocks.size(); ++i) {
    expect_matches(segment.at("blocks")[i], info.blocks[i]);
  }
}

class CapiSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(npumem_allocator_create("sim:hbm=96MiB,ddr=1GiB", nullptr, &handle_), NPUMEM_OK)
        << npumem_last_error();
  }
  void TearDown() override { npumem_allocator_destroy(handle_); }

  npumem::Allocator& allocator() { return *handle_->allocator; }

  npumem_allocator_t* handle_ = nullptr;
};

TEST_F(CapiSnapshot, AnEmptyAllocatorHasNoSegments) {
  const json snapshot = snapshot_of(handle_);
  EXPECT_EQ(snapshot.at("format").get<std::string>(), "npumem.snapshot");
  EXPECT_EQ(snapshot.at("device").at("name").get<std::string>(), "sim:0");
  EXPECT_EQ(snapshot.at("config").get<std::string>(), npumem::to_string(npumem::Config{}));
  EXPECT_TRUE(snapshot.at("segments").empty());
  ASSERT_EQ(snapshot.at("pools").size(), 1U);
  EXPECT_EQ(snapshot.at("pools")[0].at("name"), "default");
  EXPECT_EQ(snapshot.at("pools")[0].at("quota_bytes"), 0);
  EXPECT_EQ(snapshot.at("stats").at("allocated_bytes.all.current"), 0);
}

TEST_F(CapiSnapshot, SegmentsBlocksPoolsAndStatsMatchTheAllocator) {
  allocator().create_pool("model \"A\"\\", 512 << 20);
  std::vector<void*> live;
  {
    npumem::ScopedMemoryTag tag("weights/\"layer\"\t1·");
    live.push_back(allocator().allocate(512));
    live.push_back(allocator().allocate(3 << 20));
  }
  {
    npumem::PoolScope scope(allocator(), "model \"A\"\\");
    live.push_back(allocator().allocate(25 << 20));
  }
  live.push_back(allocator().allocate(80 << 20));  // spills to DDR
  allocator().deallocate(live[1]);

  const json snapshot = snapshot_of(handle_);
  const std::vector<npumem::SegmentInfo> segments = allocator().snapshot();
  ASSERT_EQ(snapshot.at("segments").size(), segments.size());
  for (std::size_t i = 0; i < segments.size(); ++i) {
    expect_matches(snapshot.at("segments")[i], segments[i]);
  }

  const auto pools = allocator().pools();
  ASSERT_EQ(snapshot.at("pools").size(), pools.size());
  for (std::size_t i = 0; i < pools.size(); ++i) {
    EXPECT_EQ(snapshot.at("pools")[i].at("name").get<std::string>(), pools[i].name);
    EXPECT_EQ(snapshot.at("pools")[i].at("quota_bytes").get<std::uint64_t>(), pools[i].quota_bytes);
  }

  const auto stats = allocator().stats().as_map();
  ASSERT_EQ(snapshot.at("stats").size(), stats.size());
  for (const auto& [key, value] : stats) {
    EXPECT_EQ(snapshot.at("stats").at(key).get<std::int64_t>(), value) << key;
  }
  EXPECT_EQ(snapshot.at("stats").at("num_spills").get<std::int64_t>(), 1);

  for (void* ptr : {live[0], live[2], live[3]}) allocator().deallocate(ptr);
}

}  // namespace
