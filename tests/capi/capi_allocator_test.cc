// The handle-based calls of the C ABI: create, allocate, stats, empty_cache, destroy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "npumem/npumem.h"
#include "npumem/units.h"

namespace {

constexpr int64_t kMiB = static_cast<int64_t>(npumem::MiB);

class CapiAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB,ddr=0", nullptr, &allocator_), NPUMEM_OK)
        << npumem_last_error();
  }
  void TearDown() override { EXPECT_EQ(npumem_allocator_destroy(allocator_), NPUMEM_OK); }

  npumem_stats_t stats() {
    npumem_stats_t out;
    EXPECT_EQ(npumem_stats(allocator_, &out), NPUMEM_OK) << npumem_last_error();
    return out;
  }

  int64_t stat(const char* key) {
    int64_t value = -1;
    EXPECT_EQ(npumem_stat(allocator_, key, &value), NPUMEM_OK) << npumem_last_error();
    return value;
  }

  npumem_allocator_t* allocator_ = nullptr;
};

TEST(CapiInfo, VersionIsTheProjectVersion) {
  EXPECT_STREQ(npumem_version(), NPUMEM_EXPECTED_VERSION);
}

TEST(CapiInfo, EveryStatusHasAName) {
  EXPECT_STREQ(npumem_status_name(NPUMEM_OK), "ok");
  EXPECT_STREQ(npumem_status_name(NPUMEM_OUT_OF_MEMORY), "out_of_memory");
  EXPECT_STREQ(npumem_status_name(NPUMEM_INVALID_POINTER), "invalid_pointer");
  EXPECT_STREQ(npumem_status_name(NPUMEM_INVALID_CONFIG), "invalid_config");
  EXPECT_STREQ(npumem_status_name(NPUMEM_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(npumem_status_name(NPUMEM_INTERNAL), "internal");
  EXPECT_STREQ(npumem_status_name(static_cast<npumem_status_t>(42)), "unknown");
}

TEST(CapiWarnings, AStrategyFallbackIsReportedAndNoneIsEmpty) {
  npumem_allocator_t* fallback = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB,ddr=0,vmm=false", "expandable_segments:true",
                                    &fallback),
            NPUMEM_OK)
      << npumem_last_error();
  char* text = nullptr;
  ASSERT_EQ(npumem_warnings(fallback, &text), NPUMEM_OK) << npumem_last_error();
  const std::string warnings = text;
  npumem_string_free(text);
  EXPECT_NE(warnings.find("expandable_segments feature is not supported"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.back(), '\n');
  EXPECT_EQ(npumem_allocator_destroy(fallback), NPUMEM_OK);

  npumem_allocator_t* plain = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB,ddr=0", nullptr, &plain), NPUMEM_OK);
  ASSERT_EQ(npumem_warnings(plain, &text), NPUMEM_OK);
  EXPECT_STREQ(text, "");
  npumem_string_free(text);
  EXPECT_EQ(npumem_warnings(plain, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_allocator_destroy(plain), NPUMEM_OK);
}

TEST_F(CapiAllocator, ResizeGrowsInPlaceIntoAFreeNeighbourAndRefusesOtherwise) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 1 * kMiB, &ptr), NPUMEM_OK);
  int resized = -1;
  ASSERT_EQ(npumem_resize(allocator_, ptr, 1536 * 1024, &resized), NPUMEM_OK)
      << npumem_last_error();
  EXPECT_EQ(resized, 1);
  EXPECT_EQ(stat("requested_bytes.all.current"), 1536 * 1024);
  EXPECT_EQ(npumem_resize(allocator_, ptr, 512 * kMiB, &resized), NPUMEM_OK);
  EXPECT_EQ(resized, 0);
  EXPECT_EQ(stat("requested_bytes.all.current"), 1536 * 1024);
  int dummy = 0;
  EXPECT_EQ(npumem_resize(allocator_, &dummy, 64, &resized), NPUMEM_INVALID_POINTER);
  EXPECT_EQ(npumem_resize(allocator_, nullptr, 64, &resized), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

TEST_F(CapiAllocator, PoolsAndTagsShowInTheSnapshot) {
  ASSERT_EQ(npumem_create_pool(allocator_, "kv", 8 * kMiB), NPUMEM_OK) << npumem_last_error();
  EXPECT_EQ(npumem_create_pool(allocator_, nullptr, 0), NPUMEM_INVALID_ARGUMENT);
  ASSERT_EQ(npumem_set_tag("encoder"), NPUMEM_OK);
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 4096, &ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_set_tag(nullptr), NPUMEM_OK);
  char* json = nullptr;
  ASSERT_EQ(npumem_snapshot_json(allocator_, &json), NPUMEM_OK);
  const std::string snapshot = json;
  npumem_string_free(json);
  EXPECT_NE(snapshot.find("\"encoder\""), std::string::npos);
  EXPECT_NE(snapshot.find("\"kv\""), std::string::npos);
  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

// The pluggable allocator's calls carry no pool: a thread routes them to one by name.
TEST_F(CapiAllocator, SetPoolRoutesThisThreadsAllocations) {
  ASSERT_EQ(npumem_create_pool(allocator_, "kv", 8 * kMiB), NPUMEM_OK) << npumem_last_error();
  ASSERT_EQ(npumem_set_pool("kv"), NPUMEM_OK);
  void* in_pool = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 4096, &in_pool), NPUMEM_OK) << npumem_last_error();
  void* elsewhere = nullptr;
  std::thread([&] { EXPECT_EQ(npumem_allocate(allocator_, 8192, &elsewhere), NPUMEM_OK); }).join();
  ASSERT_EQ(npumem_set_pool(nullptr), NPUMEM_OK);
  void* outside = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 2048, &outside), NPUMEM_OK);
  char* json = nullptr;
  ASSERT_EQ(npumem_snapshot_json(allocator_, &json), NPUMEM_OK);
  const nlohmann::json snapshot = nlohmann::json::parse(json);
  npumem_string_free(json);
  std::map<std::string, std::int64_t> requested;
  for (const auto& pool : snapshot.at("pools")) {
    requested[pool.at("name")] = pool.at("stats").at("requested_bytes.all.current");
  }
  EXPECT_EQ(requested["kv"], 4096);
  EXPECT_EQ(requested["default"], 8192 + 2048) << "another thread's, and after the reset";
  ASSERT_EQ(npumem_set_pool("nope"), NPUMEM_OK);
  void* refused = nullptr;
  EXPECT_EQ(npumem_allocate(allocator_, 64, &refused), NPUMEM_INVALID_CONFIG);
  EXPECT_NE(std::string(npumem_last_error()).find("unknown pool 'nope'"), std::string::npos);
  EXPECT_EQ(refused, nullptr);
  ASSERT_EQ(npumem_set_pool(""), NPUMEM_OK);
  for (void* ptr : {in_pool, elsewhere, outside})
    EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

TEST_F(CapiAllocator, ARemovedPoolGivesBackItsMemory) {
  ASSERT_EQ(npumem_create_pool(allocator_, "kv", 8 * kMiB), NPUMEM_OK) << npumem_last_error();
  void* ptr = nullptr;
  ASSERT_EQ(npumem_pool_allocate(allocator_, "kv", 4096, &ptr), NPUMEM_OK);
  size_t released = 777;
  EXPECT_EQ(npumem_remove_pool(allocator_, "kv", &released), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(released, 0u) << "a failing call's outputs are 0";
  EXPECT_NE(std::string(npumem_last_error()).find("holds 1 live allocation"), std::string::npos)
      << npumem_last_error();
  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_remove_pool(allocator_, "kv", &released), NPUMEM_OK) << npumem_last_error();
  EXPECT_GT(released, 0u);
  EXPECT_EQ(npumem_remove_pool(allocator_, "kv", nullptr), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(npumem_remove_pool(allocator_, nullptr, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_create_pool(allocator_, "kv", 16 * kMiB), NPUMEM_OK) << "the name is free";
}

// A server in C reads each model's pool: its name, quota, tier and own figures.
TEST_F(CapiAllocator, PoolsAreListedWithTheirOwnStatistics) {
  ASSERT_EQ(npumem_create_pool(allocator_, "encoder", 64 * kMiB), NPUMEM_OK);
  ASSERT_EQ(npumem_create_tier_pool(allocator_, "kv", 0, NPUMEM_TIER_HBM), NPUMEM_OK);
  void* encoder = nullptr;
  void* kv = nullptr;
  void* plain = nullptr;
  ASSERT_EQ(npumem_pool_allocate(allocator_, "encoder", 3 * kMiB, &encoder), NPUMEM_OK);
  ASSERT_EQ(npumem_pool_allocate(allocator_, "kv", 1000, &kv), NPUMEM_OK);
  ASSERT_EQ(npumem_allocate(allocator_, 5000, &plain), NPUMEM_OK);

  size_t count = 0;
  ASSERT_EQ(npumem_pool_count(allocator_, &count), NPUMEM_OK) << npumem_last_error();
  ASSERT_EQ(count, 3u);
  std::map<std::string, npumem_pool_info_t> pools;
  for (size_t i = 0; i < count; ++i) {
    npumem_pool_info_t info;
    ASSERT_EQ(npumem_pool_info(allocator_, i, &info), NPUMEM_OK) << npumem_last_error();
    pools[info.name] = info;
    if (i == 0) {
      EXPECT_STREQ(info.name, "default");
    }
    npumem_string_free(info.name);
  }
  EXPECT_EQ(pools["encoder"].quota_bytes, static_cast<uint64_t>(64 * kMiB));
  EXPECT_EQ(pools["encoder"].tier, NPUMEM_TIER_ANY);
  EXPECT_EQ(pools["encoder"].stats.requested_bytes, 3 * kMiB);
  EXPECT_EQ(pools["kv"].tier, NPUMEM_TIER_HBM);
  EXPECT_EQ(pools["kv"].quota_bytes, 0u);
  EXPECT_EQ(pools["kv"].stats.requested_bytes, 1000);
  EXPECT_EQ(pools["default"].stats.requested_bytes, 5000);
  EXPECT_EQ(pools["default"].stats.allocations, 1);
  EXPECT_GT(pools["encoder"].stats.reserved_bytes, 0);
  EXPECT_EQ(pools["encoder"].stats.reserved_bytes + pools["kv"].stats.reserved_bytes +
                pools["default"].stats.reserved_bytes,
            stats().reserved_bytes)
      << "the pools' reserved bytes add up to the allocator's";

  npumem_stats_t encoder_stats;
  ASSERT_EQ(npumem_pool_stats(allocator_, "encoder", &encoder_stats), NPUMEM_OK);
  EXPECT_EQ(encoder_stats.requested_bytes, 3 * kMiB);
  EXPECT_EQ(npumem_pool_stats(allocator_, "nope", &encoder_stats), NPUMEM_INVALID_CONFIG);
  EXPECT_NE(std::string(npumem_last_error()).find("unknown pool 'nope'"), std::string::npos);
  EXPECT_EQ(npumem_pool_stats(allocator_, nullptr, &encoder_stats), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_pool_count(allocator_, nullptr), NPUMEM_INVALID_ARGUMENT);

  npumem_pool_info_t past;
  past.name = reinterpret_cast<char*>(&count);
  EXPECT_EQ(npumem_pool_info(allocator_, 3, &past), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(past.name, nullptr) << "a failing call leaves no name to free";
  EXPECT_NE(std::string(npumem_last_error()).find("past the last (3 pools)"), std::string::npos)
      << npumem_last_error();

  ASSERT_EQ(npumem_deallocate(allocator_, kv), NPUMEM_OK);
  ASSERT_EQ(npumem_remove_pool(allocator_, "kv", nullptr), NPUMEM_OK);
  ASSERT_EQ(npumem_pool_count(allocator_, &count), NPUMEM_OK);
  EXPECT_EQ(count, 2u) << "a removed pool is no longer listed";
  for (void* ptr : {encoder, plain}) EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

struct SeenEvents {
  int allocs = 0;
  int frees = 0;
  uint64_t last_requested = 0;
  std::string last_tag;
};

void count_event(const npumem_event_t* event, void* user_data) {
  auto* seen = static_cast<SeenEvents*>(user_data);
  if (event->kind == NPUMEM_EVENT_ALLOC) {
    ++seen->allocs;
    seen->last_requested = event->requested_bytes;
    seen->last_tag = event->tag;
  } else if (event->kind == NPUMEM_EVENT_FREE) {
    ++seen->frees;
  }
}

TEST_F(CapiAllocator, HooksSeeTheKindsAskedForUntilRemoved) {
  SeenEvents seen;
  uint64_t id = 0;
  ASSERT_EQ(npumem_add_hook(allocator_, 1u << NPUMEM_EVENT_ALLOC, count_event, &seen, &id),
            NPUMEM_OK)
      << npumem_last_error();
  ASSERT_EQ(npumem_set_tag("weights"), NPUMEM_OK);
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 1000, &ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_set_tag(nullptr), NPUMEM_OK);
  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  EXPECT_EQ(seen.allocs, 1);
  EXPECT_EQ(seen.frees, 0);  // not asked for
  EXPECT_EQ(seen.last_requested, 1000u);
  EXPECT_EQ(seen.last_tag, "weights");
  ASSERT_EQ(npumem_remove_hook(allocator_, id), NPUMEM_OK);
  EXPECT_EQ(npumem_remove_hook(allocator_, id), NPUMEM_INVALID_ARGUMENT);
  ASSERT_EQ(npumem_allocate(allocator_, 1000, &ptr), NPUMEM_OK);
  EXPECT_EQ(seen.allocs, 1);
  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  EXPECT_EQ(npumem_add_hook(allocator_, 0, count_event, &seen, &id), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_add_hook(allocator_, (1u << 10) | 1u, count_event, &seen, &id),
            NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("sets bits no event kind has (1024)"),
            std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(npumem_add_hook(allocator_, 1, nullptr, &seen, &id), NPUMEM_INVALID_ARGUMENT);
}

TEST_F(CapiAllocator, SizePatternsCountRequestsPerIteration) {
  char* text = nullptr;
  EXPECT_EQ(npumem_size_patterns(allocator_, &text), NPUMEM_INVALID_ARGUMENT);
  ASSERT_EQ(npumem_size_patterns_start(allocator_), NPUMEM_OK) << npumem_last_error();
  for (int step = 0; step < 3; ++step) {
    void* a = nullptr;
    ASSERT_EQ(npumem_allocate(allocator_, 4096, &a), NPUMEM_OK);
    ASSERT_EQ(npumem_deallocate(allocator_, a), NPUMEM_OK);
    ASSERT_EQ(npumem_iteration(allocator_), NPUMEM_OK);
  }
  ASSERT_EQ(npumem_size_patterns(allocator_, &text), NPUMEM_OK) << npumem_last_error();
  const std::string report = text;
  npumem_string_free(text);
  EXPECT_NE(report.find("4.00 KiB (4096 B): 3"), std::string::npos) << report;
  EXPECT_NE(report.find("repetition of the previous iteration: 100% 100%"), std::string::npos)
      << report;
}

// A C program's leak check: a tagged buffer kept every iteration is named as a leak,
// a loop that frees what it makes is not.
TEST_F(CapiAllocator, LeakCheckNamesWhatEachIterationKeeps) {
  char* text = nullptr;
  int leaking = -1;
  EXPECT_EQ(npumem_leak_report(allocator_, &leaking, &text), NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("needs npumem_leak_check_start first"),
            std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(leaking, 0);
  EXPECT_EQ(npumem_leak_check_stop(allocator_), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_leak_check_start(allocator_, -0.5, 1, 0), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_leak_check_start(allocator_, std::nan(""), 1, 0), NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("threshold nan: "), std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(npumem_leak_check_start(allocator_, -1e-9, 1, 0), NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("threshold -1e-09: "), std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(npumem_leak_check_start(nullptr, 0, 1, 0), NPUMEM_INVALID_ARGUMENT);
  // A negative warm-up passed from C wraps to a count no run reaches: it was accepted,
  // and the check never judged an iteration.
  const int negative = -3;
  EXPECT_EQ(npumem_leak_check_start(allocator_, 0, static_cast<size_t>(negative), 0),
            NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("warmup_iterations"), std::string::npos)
      << npumem_last_error();

  const auto run = [&](bool keep) {
    std::vector<void*> kept;
    for (int step = 0; step < 6; ++step) {
      void* scratch = nullptr;
      EXPECT_EQ(npumem_allocate(allocator_, 64 * 1024, &scratch), NPUMEM_OK);
      EXPECT_EQ(npumem_set_tag("history"), NPUMEM_OK);
      void* entry = nullptr;
      EXPECT_EQ(npumem_allocate(allocator_, 4096, &entry), NPUMEM_OK);
      EXPECT_EQ(npumem_set_tag(nullptr), NPUMEM_OK);
      if (keep) {
        kept.push_back(entry);
      } else {
        EXPECT_EQ(npumem_deallocate(allocator_, entry), NPUMEM_OK);
      }
      EXPECT_EQ(npumem_deallocate(allocator_, scratch), NPUMEM_OK);
      EXPECT_EQ(npumem_iteration(allocator_), NPUMEM_OK);
    }
    return kept;
  };
  ASSERT_EQ(npumem_leak_check_start(allocator_, 0, 1, 0), NPUMEM_OK) << npumem_last_error();
  const std::vector<void*> kept = run(true);
  ASSERT_EQ(npumem_leak_report(allocator_, &leaking, &text), NPUMEM_OK) << npumem_last_error();
  std::string report = text;
  npumem_string_free(text);
  EXPECT_EQ(leaking, 1) << report;
  EXPECT_NE(report.find("verdict: LEAK SUSPECTED"), std::string::npos) << report;
  EXPECT_NE(report.find("history"), std::string::npos) << report;

  // A second start judges from there on: the loop that frees its entries is no leak.
  ASSERT_EQ(npumem_leak_check_start(allocator_, 0, 1, 0), NPUMEM_OK) << npumem_last_error();
  run(false);
  ASSERT_EQ(npumem_leak_report(allocator_, &leaking, &text), NPUMEM_OK) << npumem_last_error();
  report = text;
  npumem_string_free(text);
  EXPECT_EQ(leaking, 0) << report;
  EXPECT_EQ(report.find("LEAK SUSPECTED"), std::string::npos) << report;

  ASSERT_EQ(npumem_leak_check_stop(allocator_), NPUMEM_OK) << npumem_last_error();
  EXPECT_EQ(npumem_leak_report(allocator_, nullptr, &text), NPUMEM_INVALID_ARGUMENT);
  for (void* entry : kept) EXPECT_EQ(npumem_deallocate(allocator_, entry), NPUMEM_OK);
}

TEST_F(CapiAllocator, AllocateAndDeallocateMoveTheStats) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 3 * kMiB, &ptr), NPUMEM_OK) << npumem_last_error();
  ASSERT_NE(ptr, nullptr);
  EXPECT_STREQ(npumem_last_error(), "");

  npumem_stats_t live = stats();
  EXPECT_EQ(live.allocated_bytes, 3 * kMiB);
  EXPECT_EQ(live.requested_bytes, 3 * kMiB);
  EXPECT_EQ(live.allocations, 1);
  EXPECT_EQ(live.segments, 1);
  EXPECT_GE(live.reserved_bytes, 3 * kMiB);
  EXPECT_EQ(live.hbm_allocated_bytes, 3 * kMiB);
  EXPECT_EQ(live.hbm_reserved_bytes, live.reserved_bytes);
  EXPECT_EQ(live.ddr_allocated_bytes, 0);
  EXPECT_EQ(live.num_device_alloc, 1);

  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK) << npumem_last_error();
  const npumem_stats_t after = stats();
  EXPECT_EQ(after.allocated_bytes, 0);
  EXPECT_EQ(after.allocations, 0);
  EXPECT_EQ(after.allocated_bytes_peak, 3 * kMiB);
  EXPECT_EQ(after.reserved_bytes, live.reserved_bytes) << "the segment stays cached";
}

TEST_F(CapiAllocator, StatByKeyMatchesTheStruct) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 5 * kMiB, &ptr), NPUMEM_OK);
  const npumem_stats_t all = stats();
  EXPECT_EQ(stat("allocated_bytes.all.current"), all.allocated_bytes);
  EXPECT_EQ(stat("reserved_bytes.all.current"), all.reserved_bytes);
  EXPECT_EQ(stat("reserved_bytes.hbm.peak"), all.reserved_bytes_peak);
  EXPECT_EQ(stat("requested_bytes.all.current"), 5 * kMiB);
  EXPECT_EQ(stat("allocation.large_pool.current"), 1);
  EXPECT_EQ(stat("num_device_alloc"), all.num_device_alloc);
  EXPECT_EQ(stat("num_ooms"), 0);
  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

TEST_F(CapiAllocator, ResetPeakStatsDropsThePeakToTheCurrentValue) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 8 * kMiB, &ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  EXPECT_EQ(stats().allocated_bytes_peak, 8 * kMiB);
  ASSERT_EQ(npumem_reset_peak_stats(allocator_), NPUMEM_OK);
  EXPECT_EQ(stats().allocated_bytes_peak, 0);
}

TEST_F(CapiAllocator, ResetAccumulatedStatsZeroesTotalsOnly) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 8 * kMiB, &ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_reset_accumulated_stats(allocator_), NPUMEM_OK);
  EXPECT_EQ(stat("allocated_bytes.all.allocated"), 0);
  EXPECT_EQ(stat("num_device_alloc"), 0);
  EXPECT_EQ(stat("allocated_bytes.all.current"), 8 * kMiB);
  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  EXPECT_EQ(stat("allocated_bytes.all.freed"), 8 * kMiB);
  EXPECT_EQ(npumem_reset_accumulated_stats(nullptr), NPUMEM_INVALID_ARGUMENT);
}

TEST_F(CapiAllocator, MemoryFractionCapsHbm) {
  ASSERT_EQ(npumem_set_memory_fraction(allocator_, 0.01), NPUMEM_OK);  // about 10 MiB
  void* ptr = nullptr;
  EXPECT_EQ(npumem_allocate(allocator_, 64 * kMiB, &ptr), NPUMEM_OUT_OF_MEMORY);
  EXPECT_NE(std::string(npumem_last_error()).find("memory fraction 0.01"), std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(npumem_set_memory_fraction(allocator_, 2.0), NPUMEM_INVALID_CONFIG);
  EXPECT_NE(std::string(npumem_last_error()).find("between 0 and 1"), std::string::npos);
  ASSERT_EQ(npumem_set_memory_fraction(allocator_, 1.0), NPUMEM_OK);
  ASSERT_EQ(npumem_allocate(allocator_, 64 * kMiB, &ptr), NPUMEM_OK);
  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
}

TEST_F(CapiAllocator, EmptyCacheReleasesCachedSegments) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 4 * kMiB, &ptr), NPUMEM_OK);
  const int64_t reserved = stats().reserved_bytes;
  size_t released = 0;
  ASSERT_EQ(npumem_empty_cache(allocator_, &released), NPUMEM_OK);
  EXPECT_EQ(released, 0U) << "a live block pins its segment";

  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_empty_cache(allocator_, &released), NPUMEM_OK);
  EXPECT_EQ(static_cast<int64_t>(released), reserved);
  EXPECT_EQ(stats().reserved_bytes, 0);
  EXPECT_EQ(npumem_empty_cache(allocator_, nullptr), NPUMEM_OK) << "released is optional";
}

TEST_F(CapiAllocator, IterationMarksAreAcceptedAndNullIsRejected) {
  EXPECT_EQ(npumem_iteration(allocator_), NPUMEM_OK);
  EXPECT_EQ(npumem_iteration(nullptr), NPUMEM_INVALID_ARGUMENT);
}

TEST_F(CapiAllocator, ZeroBytesGiveDistinctValidPointers) {
  void* first = nullptr;
  void* second = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 0, &first), NPUMEM_OK);
  ASSERT_EQ(npumem_allocate(allocator_, 0, &second), NPUMEM_OK);
  EXPECT_NE(first, nullptr);
  EXPECT_NE(first, second);
  EXPECT_EQ(npumem_deallocate(allocator_, first), NPUMEM_OK);
  EXPECT_EQ(npumem_deallocate(allocator_, second), NPUMEM_OK);
}

TEST_F(CapiAllocator, DeallocatingNullIsANoOp) {
  EXPECT_EQ(npumem_deallocate(allocator_, nullptr), NPUMEM_OK);
  EXPECT_EQ(stats().num_device_alloc, 0);
}

TEST(CapiAllocatorConfig, TheConfStringReachesTheAllocator) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB", "granule:4096", &allocator), NPUMEM_OK)
      << npumem_last_error();
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator, 1, &ptr), NPUMEM_OK);
  int64_t allocated = 0;
  ASSERT_EQ(npumem_stat(allocator, "allocated_bytes.all.current", &allocated), NPUMEM_OK);
  EXPECT_EQ(allocated, 4096) << "one byte rounded to the configured granule";
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}

TEST(CapiAllocatorConfig, ThePlannedStrategyServesIterationsAfterTheFirst) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB", "strategy:planned", &allocator), NPUMEM_OK)
      << npumem_last_error();
  for (int iteration = 0; iteration < 3; ++iteration) {
    ASSERT_EQ(npumem_iteration(allocator), NPUMEM_OK);
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(npumem_allocate(allocator, 4 * kMiB, &a), NPUMEM_OK);
    ASSERT_EQ(npumem_allocate(allocator, 6 * kMiB, &b), NPUMEM_OK);
    ASSERT_EQ(npumem_deallocate(allocator, a), NPUMEM_OK);
    ASSERT_EQ(npumem_deallocate(allocator, b), NPUMEM_OK);
  }
  int64_t value = -1;
  ASSERT_EQ(npumem_stat(allocator, "planned.hits", &value), NPUMEM_OK) << npumem_last_error();
  EXPECT_EQ(value, 4);
  ASSERT_EQ(npumem_stat(allocator, "planned.learning", &value), NPUMEM_OK);
  EXPECT_EQ(value, 2);
  ASSERT_EQ(npumem_stat(allocator, "planned.arena_bytes", &value), NPUMEM_OK);
  EXPECT_EQ(value, 10 * kMiB);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}

// Two shapes whose first 16 requests are alike: with keys, each gets its own plan.
TEST(CapiAllocatorConfig, IterationKeysChooseThePlans) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB", "strategy:planned", &allocator), NPUMEM_OK)
      << npumem_last_error();
  for (int iteration = 0; iteration < 8; ++iteration) {
    const uint64_t shape = iteration % 2;
    ASSERT_EQ(npumem_iteration_key(allocator, shape), NPUMEM_OK);
    void* previous = nullptr;
    for (int r = 0; r < 21; ++r) {
      void* next = nullptr;
      const size_t bytes = r < 16 ? kMiB : (shape == 0 ? 4 : 8) * kMiB;
      ASSERT_EQ(npumem_allocate(allocator, bytes, &next), NPUMEM_OK);
      if (previous != nullptr) {
        ASSERT_EQ(npumem_deallocate(allocator, previous), NPUMEM_OK);
      }
      previous = next;
    }
    ASSERT_EQ(npumem_deallocate(allocator, previous), NPUMEM_OK);
  }
  int64_t value = -1;
  ASSERT_EQ(npumem_stat(allocator, "planned.fallbacks", &value), NPUMEM_OK);
  EXPECT_EQ(value, 0);
  ASSERT_EQ(npumem_stat(allocator, "planned.plans_kept", &value), NPUMEM_OK);
  EXPECT_EQ(value, 2);
  // Each kept plan by its index: its key, and its lower bound (two neighbours of the
  // tail live together).
  for (int64_t plan = 0; plan < 2; ++plan) {
    const std::string prefix = "planned.plans." + std::to_string(plan) + ".";
    ASSERT_EQ(npumem_stat(allocator, (prefix + "key").c_str(), &value), NPUMEM_OK);
    EXPECT_EQ(value, plan);
    ASSERT_EQ(npumem_stat(allocator, (prefix + "lower_bound_bytes").c_str(), &value), NPUMEM_OK);
    EXPECT_EQ(value, (plan == 0 ? 8 : 16) * kMiB);
  }
  EXPECT_EQ(npumem_iteration_key(nullptr, 1), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}

TEST(CapiAllocatorConfig, BackedMemoryIsWritable) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("host", "", &allocator), NPUMEM_OK) << npumem_last_error();
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator, 4096, &ptr), NPUMEM_OK);
  std::memset(ptr, 0x5A, 4096);
  EXPECT_EQ(static_cast<unsigned char*>(ptr)[4095], 0x5A);
  EXPECT_EQ(npumem_deallocate(allocator, ptr), NPUMEM_OK);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}

TEST(CapiAllocatorConfig, DestroyingNullIsANoOp) {
  EXPECT_EQ(npumem_allocator_destroy(nullptr), NPUMEM_OK);
}

TEST(CapiAllocatorConfig, AHandleUsedAfterDestroyIsAnInvalidArgument) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=1GiB", nullptr, &allocator), NPUMEM_OK);
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator, 4096, &ptr), NPUMEM_OK);
  ASSERT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);

  void* after = nullptr;
  EXPECT_EQ(npumem_allocate(allocator, 4096, &after), NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("after npumem_allocator_destroy"),
            std::string::npos)
      << npumem_last_error();
  EXPECT_EQ(after, nullptr);
  EXPECT_EQ(npumem_deallocate(allocator, ptr), NPUMEM_INVALID_ARGUMENT);
  npumem_stats_t stats{};
  EXPECT_EQ(npumem_stats(allocator, &stats), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_INVALID_ARGUMENT);  // twice
  EXPECT_NE(std::string(npumem_last_error()).find("destroyed already"), std::string::npos)
      << npumem_last_error();
}

TEST(CapiAllocatorConfig, DestroyDoesNotRefuseLiveBlocks) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("host", nullptr, &allocator), NPUMEM_OK);
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator, 1 << 20, &ptr), NPUMEM_OK);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
  EXPECT_STREQ(npumem_last_error(), "");
}

}  // namespace

TEST(CapiTiers, PinnedPoolsAndCopiesBetweenTiers) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("sim:hbm=64MiB,ddr=256MiB,backing=host", nullptr, &allocator),
            NPUMEM_OK)
      << npumem_last_error();
  ASSERT_EQ(npumem_create_tier_pool(allocator, "weights", 0, NPUMEM_TIER_DDR), NPUMEM_OK)
      << npumem_last_error();
  void* master = nullptr;
  ASSERT_EQ(npumem_pool_allocate(allocator, "weights", 4 * kMiB, &master), NPUMEM_OK);
  std::memset(master, 0x5a, 4 * kMiB);
  void* copy = nullptr;
  ASSERT_EQ(npumem_allocate(allocator, 4 * kMiB, &copy), NPUMEM_OK);
  double seconds = 0;
  ASSERT_EQ(npumem_copy(allocator, copy, master, 4 * kMiB, &seconds), NPUMEM_OK)
      << npumem_last_error();
  EXPECT_EQ(static_cast<unsigned char*>(copy)[4 * kMiB - 1], 0x5a);
  EXPECT_DOUBLE_EQ(seconds, static_cast<double>(4 * kMiB) / 50e9);
  int64_t value = 0;
  ASSERT_EQ(npumem_stat(allocator, "copy_bytes.ddr_to_hbm", &value), NPUMEM_OK);
  EXPECT_EQ(value, 4 * kMiB);
  ASSERT_EQ(npumem_stat(allocator, "allocated_bytes.ddr.current", &value), NPUMEM_OK);
  EXPECT_EQ(value, 4 * kMiB);

  EXPECT_EQ(npumem_copy(allocator, copy, master, 8 * kMiB, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(npumem_last_error()).find("overruns"), std::string::npos);
  EXPECT_EQ(npumem_create_tier_pool(allocator, "odd", 0, static_cast<npumem_tier_t>(7)),
            NPUMEM_INVALID_ARGUMENT);
  void* none = nullptr;
  EXPECT_EQ(npumem_pool_allocate(allocator, "missing", kMiB, &none), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(npumem_deallocate(allocator, copy), NPUMEM_OK);
  EXPECT_EQ(npumem_deallocate(allocator, master), NPUMEM_OK);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);

  ASSERT_EQ(npumem_allocator_create("sim:hbm=64MiB,ddr=0", nullptr, &allocator), NPUMEM_OK);
  EXPECT_EQ(npumem_create_tier_pool(allocator, "weights", 0, NPUMEM_TIER_DDR),
            NPUMEM_INVALID_CONFIG);
  EXPECT_NE(std::string(npumem_last_error()).find("has no ddr tier"), std::string::npos);
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}
