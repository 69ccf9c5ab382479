// Errors across the C ABI: status codes, messages that name the problem, and nothing
// thrown or changed by a failing call.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "npumem/npumem.h"

namespace {

std::string last_error() {
  return npumem_last_error();
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

// Every entry point is noexcept for C++ callers: an escaping exception would terminate.
static_assert(noexcept(npumem_malloc(0, 0, nullptr)));
static_assert(noexcept(npumem_free(nullptr, 0, 0, nullptr)));
static_assert(noexcept(npumem_allocator_create(nullptr, nullptr, nullptr)));
static_assert(noexcept(npumem_allocate(nullptr, 0, nullptr)));
static_assert(noexcept(npumem_snapshot_json(nullptr, nullptr)));
static_assert(noexcept(npumem_last_error()));

class CapiErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(npumem_allocator_create("sim:hbm=64MiB,ddr=0", nullptr, &allocator_), NPUMEM_OK)
        << npumem_last_error();
  }
  void TearDown() override { npumem_allocator_destroy(allocator_); }

  npumem_allocator_t* allocator_ = nullptr;
};

TEST(CapiCreateErrors, BadSpecIsInvalidConfigNamingTheSpec) {
  npumem_allocator_t* allocator = reinterpret_cast<npumem_allocator_t*>(0x1);
  EXPECT_EQ(npumem_allocator_create("tpu:0", nullptr, &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(allocator, nullptr);
  EXPECT_TRUE(Contains(last_error(), "tpu:0"));
  EXPECT_TRUE(Contains(last_error(), "unknown device"));

  EXPECT_EQ(npumem_allocator_create("sim:hbm=lots", nullptr, &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_TRUE(Contains(last_error(), "hbm"));
}

TEST(CapiCreateErrors, BadConfIsInvalidConfigNamingTheKey) {
  npumem_allocator_t* allocator = nullptr;
  EXPECT_EQ(npumem_allocator_create("sim", "colour:blue", &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(allocator, nullptr);
  EXPECT_TRUE(Contains(last_error(), "colour"));

  EXPECT_EQ(npumem_allocator_create("sim", "granule:100", &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_TRUE(Contains(last_error(), "granule"));
}

TEST(CapiCreateErrors, NullArgumentsAreNamed) {
  npumem_allocator_t* allocator = nullptr;
  EXPECT_EQ(npumem_allocator_create(nullptr, nullptr, &allocator), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "spec is NULL");
  EXPECT_EQ(npumem_allocator_create("sim", nullptr, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "out is NULL");
}

TEST(CapiCreateErrors, ASuccessClearsTheLastError) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("nothing", nullptr, &allocator), NPUMEM_INVALID_CONFIG);
  ASSERT_NE(last_error(), "");
  ASSERT_EQ(npumem_allocator_create("sim", nullptr, &allocator), NPUMEM_OK);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(npumem_allocator_destroy(allocator), NPUMEM_OK);
}

TEST_F(CapiErrors, OutOfMemoryExplainsItself) {
  void* ptr = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(npumem_allocate(allocator_, size_t{1} << 30, &ptr), NPUMEM_OUT_OF_MEMORY);
  EXPECT_EQ(ptr, nullptr);
  EXPECT_TRUE(Contains(last_error(), "hbm"));
  EXPECT_TRUE(Contains(last_error(), "1.00 GiB"));
  int64_t ooms = 0;
  ASSERT_EQ(npumem_stat(allocator_, "num_ooms", &ooms), NPUMEM_OK);
  EXPECT_EQ(ooms, 1);
}

TEST_F(CapiErrors, DoubleFreeIsInvalidPointerAndChangesNothing) {
  void* ptr = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 1 << 20, &ptr), NPUMEM_OK);
  void* other = nullptr;
  ASSERT_EQ(npumem_allocate(allocator_, 1 << 20, &other), NPUMEM_OK);
  ASSERT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_OK);
  npumem_stats_t before;
  ASSERT_EQ(npumem_stats(allocator_, &before), NPUMEM_OK);

  EXPECT_EQ(npumem_deallocate(allocator_, ptr), NPUMEM_INVALID_POINTER);
  EXPECT_TRUE(Contains(last_error(), "double free"));

  npumem_stats_t after;
  ASSERT_EQ(npumem_stats(allocator_, &after), NPUMEM_OK);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes);
  EXPECT_EQ(npumem_deallocate(allocator_, other), NPUMEM_OK) << "the live block is untouched";
}

TEST_F(CapiErrors, ForeignPointerIsInvalidPointer) {
  int local = 0;
  EXPECT_EQ(npumem_deallocate(allocator_, &local), NPUMEM_INVALID_POINTER);
  EXPECT_TRUE(Contains(last_error(), "invalid free"));
}

TEST_F(CapiErrors, NullOutputsAreInvalidArguments) {
  EXPECT_EQ(npumem_allocate(allocator_, 64, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "out is NULL");
  EXPECT_EQ(npumem_stats(allocator_, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_stat(allocator_, "num_ooms", nullptr), NPUMEM_INVALID_ARGUMENT);
  int64_t value = 0;
  EXPECT_EQ(npumem_stat(allocator_, nullptr, &value), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "key is NULL");
  EXPECT_EQ(npumem_snapshot_json(allocator_, nullptr), NPUMEM_INVALID_ARGUMENT);
  // A NULL address to copy is an argument left out, as elsewhere, not a foreign pointer.
  int local = 0;
  EXPECT_EQ(npumem_copy(allocator_, nullptr, &local, 4, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "dst is NULL");
  EXPECT_EQ(npumem_copy(allocator_, &local, nullptr, 4, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "src is NULL");
}

// An output a failing call cannot fill reads "nothing": a caller that checks only it
// (resized, say) must not see the previous call's value.
TEST_F(CapiErrors, FailingCallsClearTheirOutputs) {
  int local = 0;
  int resized = 1;
  EXPECT_EQ(npumem_resize(allocator_, &local, 10, &resized), NPUMEM_INVALID_POINTER);
  EXPECT_EQ(resized, 0);
  double seconds = 1.0;
  EXPECT_EQ(npumem_copy(allocator_, &local, &local, 4, &seconds), NPUMEM_INVALID_POINTER);
  EXPECT_EQ(seconds, 0.0);
  size_t released = 5;
  EXPECT_EQ(npumem_empty_cache(nullptr, &released), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(released, 0u);
  uint64_t id = 7;
  EXPECT_EQ(npumem_add_hook(allocator_, 0, nullptr, nullptr, &id), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(id, 0u) << "hook ids start at 1: 0 is none";
}

TEST_F(CapiErrors, UnknownStatKeyIsNamed) {
  int64_t value = 7;
  EXPECT_EQ(npumem_stat(allocator_, "allocated_bytes.everything", &value), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(value, 7) << "the output is left alone";
  EXPECT_TRUE(Contains(last_error(), "'allocated_bytes.everything'"));
  EXPECT_TRUE(Contains(last_error(), "allocated_bytes.all.current"));
  // A planned key on another strategy: the message said "unknown" and offered it.
  EXPECT_EQ(npumem_stat(allocator_, "planned.hits", &value), NPUMEM_INVALID_ARGUMENT);
  EXPECT_TRUE(Contains(last_error(),
                       "'planned.hits' exists only under strategy:planned; this "
                       "allocator's strategy is caching"))
      << last_error();
}

TEST(CapiNullHandle, EveryHandleCallRefusesNull) {
  void* ptr = nullptr;
  npumem_stats_t stats;
  int64_t value = 0;
  size_t released = 0;
  char* json = nullptr;
  EXPECT_EQ(npumem_allocate(nullptr, 64, &ptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "allocator is NULL");
  EXPECT_EQ(npumem_deallocate(nullptr, &value), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_stats(nullptr, &stats), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_stat(nullptr, "num_ooms", &value), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_reset_peak_stats(nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_empty_cache(nullptr, &released), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_snapshot_json(nullptr, &json), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(json, nullptr);
  npumem_string_free(nullptr);
}

// Everything wrong at once, through every entry point: each answers with a status or
// NULL; none throws (it would terminate: they are noexcept) or crashes.
TEST(CapiNothingThrows, EverythingWrong) {
  EXPECT_EQ(npumem_malloc(-5, -1, nullptr), nullptr);
  EXPECT_EQ(npumem_malloc(1 << 20, 1000, nullptr), nullptr);
  EXPECT_TRUE(Contains(last_error(), "device index 1000 is out of range"));
  npumem_free(reinterpret_cast<void*>(0x1234), -1, -7, nullptr);
  EXPECT_TRUE(Contains(last_error(), "out of range"));
  EXPECT_EQ(npumem_init(-1, "no such device", "no:such,key"), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_init(63, "no such device", nullptr), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(npumem_init(63, "sim", "no:such,key"), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(npumem_device_allocator(-3, nullptr), NPUMEM_INVALID_ARGUMENT);
  EXPECT_EQ(npumem_allocator_create("", "", nullptr), NPUMEM_INVALID_ARGUMENT);
  npumem_allocator_t* allocator = nullptr;
  EXPECT_EQ(npumem_allocator_create("", ",,,", &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(npumem_allocator_create("sim:hbm=0,ddr=0", nullptr, &allocator), NPUMEM_INVALID_CONFIG);
  EXPECT_EQ(allocator, nullptr);
  EXPECT_STREQ(npumem_status_name(static_cast<npumem_status_t>(-1)), "unknown");
}

TEST(CapiNothingThrows, MessagesAreKeptPerThread) {
  npumem_allocator_t* allocator = nullptr;
  ASSERT_EQ(npumem_allocator_create("bad-spec", nullptr, &allocator), NPUMEM_INVALID_CONFIG);
  std::string other_thread_message = "unset";
  std::thread([&] { other_thread_message = npumem_last_error(); }).join();
  EXPECT_EQ(other_thread_message, "");
  EXPECT_TRUE(Contains(last_error(), "bad-spec"));
}

}  // namespace
