#include <gtest/gtest.h>

#include "device/sim_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(Resize, GrowsIntoAFreeNeighbourAndShrinksInPlace) {
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 0;
  spec.backing = Backing::host;
  Allocator allocator(std::make_shared<SimDevice>(spec));
  auto* cache = static_cast<unsigned char*>(allocator.allocate(4 * MiB));
  cache[0] = 42;
  ASSERT_TRUE(allocator.resize(cache, 12 * MiB));  // the segment's free tail follows it
  EXPECT_EQ(allocator.allocation_size(cache), 12 * MiB);
  EXPECT_EQ(cache[0], 42);
  cache[12 * MiB - 1] = 7;
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

}  // namespace
}  // namespace npumem
