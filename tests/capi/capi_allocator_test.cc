// The handle-based calls of the C ABI: create, allocate, stats, empty_cache, destroy.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

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
