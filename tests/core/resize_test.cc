#include <gtest/gtest.h>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Runs on the virtual NPU and on acl:0 over the test double of libascendcl.so.
class Resize : public ::testing::TestWithParam<testing::Backend> {};

TEST_P(Resize, GrowsIntoAFreeNeighbourAndShrinksInPlace) {
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 0;
  spec.backing = Backing::host;
  const std::shared_ptr<Device> device = testing::TestDevice(GetParam(), spec).device();
  Allocator allocator(device);
  auto* cache = static_cast<unsigned char*>(allocator.allocate(4 * MiB));
  testing::fill(*device, cache, 42, 1);
  ASSERT_TRUE(allocator.resize(cache, 12 * MiB));  // the segment's free tail follows it
  EXPECT_EQ(allocator.allocation_size(cache), 12 * MiB);
  EXPECT_TRUE(testing::holds(*device, cache, 42, 1));
  testing::fill(*device, cache + 12 * MiB - 1, 7, 1);
  EXPECT_EQ(allocator.stats().requested_bytes.all.current, static_cast<std::int64_t>(12 * MiB));
  void* neighbour = allocator.allocate(2 * MiB);
  EXPECT_FALSE(allocator.resize(cache, 24 * MiB));  // no free neighbour big enough
  EXPECT_EQ(allocator.allocation_size(cache), 12 * MiB);
  ASSERT_TRUE(allocator.resize(cache, 1 * MiB));
  testing::expect_consistent(allocator, {{cache, 1 * MiB}, {neighbour, 2 * MiB}});
  allocator.deallocate(cache);
  allocator.deallocate(neighbour);
  EXPECT_THROW(allocator.resize(cache, 10), InvalidPointer);
}

// The messages name the resize, not a free.
TEST(ResizeErrors, NameTheResize) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto* block = static_cast<unsigned char*>(allocator.allocate(1 * MiB));
  const auto message = [&](void* ptr) {
    try {
      allocator.resize(ptr, 10);
    } catch (const InvalidPointer& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(block + 8).find("invalid resize: pointer "), 0u) << message(block + 8);
  int local = 0;
  EXPECT_NE(message(&local).find("invalid resize: pointer "), std::string::npos);
  // Which allocator: with several devices in a process, the one that was asked.
  EXPECT_NE(message(&local).find("was not allocated by this allocator (device sim:0)"),
            std::string::npos)
      << message(&local);
  allocator.deallocate(block);
  EXPECT_EQ(message(block).find("invalid resize: pointer "), 0u) << message(block);
}

INSTANTIATE_TEST_SUITE_P(Devices, Resize, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
