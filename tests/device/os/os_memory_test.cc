#include "device/os/os_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace npumem {
namespace {

constexpr std::size_t kBytes = std::size_t{4} << 20;

TEST(OsMemory, ReservationsHonourLargeAlignments) {
  for (std::size_t alignment : {os::page_size(), std::size_t{2} << 20, std::size_t{1} << 30}) {
    void* base = os::reserve(kBytes, alignment);
    ASSERT_NE(base, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % alignment, 0U);
    os::release(base, kBytes);
  }
}

TEST(OsMemory, AnonymousMemoryIsZeroedAndWritable) {
  auto* bytes = static_cast<unsigned char*>(os::map_anonymous(kBytes));
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes[kBytes - 1], 0);
  bytes[kBytes - 1] = 9;
  EXPECT_EQ(bytes[kBytes - 1], 9);
  os::release(bytes, kBytes);
}

TEST(OsMemory, SharedChunkKeepsItsDataAcrossRemaps) {
  void* base = os::reserve(2 * kBytes, kBytes);
  ASSERT_NE(base, nullptr);
  const int fd = os::create_shared(kBytes);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(os::map_shared_fixed(base, kBytes, fd));
  std::memcpy(base, "stitch", 7);
  ASSERT_TRUE(os::rereserve(base, kBytes));
  void* elsewhere = static_cast<char*>(base) + kBytes;
  ASSERT_TRUE(os::map_shared_fixed(elsewhere, kBytes, fd));
  EXPECT_STREQ(static_cast<const char*>(elsewhere), "stitch");
  os::close_shared(fd);
  os::release(base, 2 * kBytes);
}

TEST(OsMemory, MachineFacts) {
  EXPECT_GE(os::page_size(), 4096U);
  EXPECT_EQ(os::page_size() & (os::page_size() - 1), 0U);
  EXPECT_GT(os::physical_memory_bytes(), 0U);
}

}  // namespace
}  // namespace npumem
