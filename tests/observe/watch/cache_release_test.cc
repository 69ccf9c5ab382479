#include <gtest/gtest.h>

#include "npumem/monitor.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(CacheRelease, ReportsReleasedBytesAndFragmentationBeforeAndAfter) {
  Allocator allocator(make_device("sim:hbm=256MiB,ddr=0"));
  // Two large segments; free one whole, and the middle of the other.
  void* a = allocator.allocate(4 * MiB);
  void* b = allocator.allocate(4 * MiB);
  void* c = allocator.allocate(4 * MiB);
  void* big = allocator.allocate(24 * MiB);
  allocator.deallocate(b);
  allocator.deallocate(big);
  const double before = allocator.fragmentation(Tier::hbm);
  ASSERT_GT(before, 0.0);

  const CacheRelease release = release_cache(allocator);
  EXPECT_EQ(release.released_bytes, 24 * MiB);
  EXPECT_EQ(release.before.reserved_bytes, 44 * MiB);
  EXPECT_EQ(release.after.reserved_bytes, 20 * MiB);
  EXPECT_EQ(release.before.allocated_bytes, 8 * MiB);
  EXPECT_EQ(release.after.allocated_bytes, 8 * MiB);
  EXPECT_DOUBLE_EQ(release.fragmentation_before[static_cast<int>(Tier::hbm)], before);
  EXPECT_DOUBLE_EQ(release.fragmentation_after[static_cast<int>(Tier::hbm)],
                   allocator.fragmentation(Tier::hbm));

  const std::string text = to_string(release);
  EXPECT_NE(text.find("released: 24.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("before: allocated 8.00 MiB, reserved 44.0 MiB"), std::string::npos);
  EXPECT_NE(text.find("after:  allocated 8.00 MiB, reserved 20.0 MiB"), std::string::npos);
  EXPECT_NE(text.find("fragmentation hbm: "), std::string::npos);
  allocator.deallocate(a);
  allocator.deallocate(c);
}

TEST(CacheRelease, NothingCachedReleasesNothing) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  const CacheRelease release = release_cache(allocator);
  EXPECT_EQ(release.released_bytes, 0u);
  EXPECT_EQ(release.before.reserved_bytes, 0u);
  EXPECT_NE(to_string(release).find("released: 0 B"), std::string::npos) << to_string(release);
}

}  // namespace
}  // namespace npumem
