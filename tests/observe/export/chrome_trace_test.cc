#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "npumem/errors.h"
#include "npumem/snapshot.h"
#include "npumem/units.h"

namespace npumem {
namespace {

nlohmann::json chrome_trace(const MemorySnapshot& snapshot) {
  std::ostringstream out;
  write_chrome_trace(snapshot, out);
  return nlohmann::json::parse(out.str());
}

std::vector<nlohmann::json> events_named(const nlohmann::json& trace, const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("name") == name) found.push_back(event);
  }
  return found;
}

TEST(ChromeTrace, CounterTracksPerTierFollowAllocatedAndReserved) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=64MiB"));
  auto recorder = record_history(allocator);
  void* p = allocator.allocate(4 * MiB);
  void* q = allocator.allocate(50 * MiB);  // spills to DDR
  allocator.deallocate(p);
  const nlohmann::json trace = chrome_trace(memory_snapshot(allocator, recorder.get()));

  const auto process = events_named(trace, "process_name");
  ASSERT_EQ(process.size(), 1u);
  EXPECT_EQ(process[0].at("ph"), "M");
  EXPECT_EQ(process[0].at("args").at("name"), "npumem sim:0");

  const auto hbm = events_named(trace, "hbm memory");
  ASSERT_EQ(hbm.size(), 3u);  // segment, alloc, free
  for (const auto& sample : hbm) {
    EXPECT_EQ(sample.at("ph"), "C");
    EXPECT_TRUE(sample.at("ts").is_number());
  }
  EXPECT_EQ(hbm.back().at("args").at("allocated"), 0);
  EXPECT_EQ(hbm.back().at("args").at("reserved"), 20 * MiB);
  const auto ddr = events_named(trace, "ddr memory");
  ASSERT_FALSE(ddr.empty());
  EXPECT_EQ(ddr.back().at("args").at("allocated"), 50 * MiB);

  const auto spills = events_named(trace, "spill");
  ASSERT_EQ(spills.size(), 1u);
  EXPECT_EQ(spills[0].at("ph"), "i");
  EXPECT_EQ(spills[0].at("args").at("tier"), "ddr");
  allocator.deallocate(q);
}

TEST(ChromeTrace, OomsAreInstantEvents) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto recorder = record_history(allocator);
  EXPECT_THROW(allocator.allocate(100 * MiB), OutOfMemory);
  const auto ooms = events_named(chrome_trace(memory_snapshot(allocator, recorder.get())), "oom");
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0].at("ph"), "i");
  EXPECT_EQ(ooms[0].at("s"), "p");
  EXPECT_EQ(ooms[0].at("args").at("requested_bytes"), 100 * MiB);
}

TEST(ChromeTrace, WithoutHistoryOneSamplePerPresentTier) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  void* p = allocator.allocate(512);
  const nlohmann::json trace = chrome_trace(memory_snapshot(allocator));
  const auto hbm = events_named(trace, "hbm memory");
  ASSERT_EQ(hbm.size(), 1u);
  EXPECT_EQ(hbm[0].at("args").at("allocated"), 512);
  EXPECT_TRUE(events_named(trace, "ddr memory").empty());
  allocator.deallocate(p);
}

}  // namespace
}  // namespace npumem
