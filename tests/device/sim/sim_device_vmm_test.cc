// The virtual-memory calls of the virtual NPU: reserve, create, map, unmap, release.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"

namespace npumem {
namespace {

constexpr std::size_t kChunk = 2 * MiB;

void* offset(void* base, std::size_t bytes) {
  return static_cast<char*>(base) + bytes;
}

class SimDeviceVmm : public ::testing::TestWithParam<std::string> {
 protected:
  SimDevice device_{parse_sim_spec("sim:hbm=16MiB,ddr=8MiB," + GetParam())};
};

TEST_P(SimDeviceVmm, ReservationsAreAlignedAndCostNoCapacity) {
  void* base = nullptr;
  ASSERT_TRUE(device_.supports_virtual_memory());
  ASSERT_EQ(device_.reserve_address(GiB, &base), DeviceStatus::ok);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(base) % kChunk, 0U);
  EXPECT_EQ(device_.tier_info(Tier::hbm).used_bytes, 0U);
  device_.release_address(base, GiB);
  EXPECT_EQ(device_.call_counts().invalid_calls, 0U);
}

TEST_P(SimDeviceVmm, RoundTripChargesAndUnchargesTheTier) {
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device_.reserve_address(8 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::ddr, 2 * kChunk, &chunk), DeviceStatus::ok);
  EXPECT_TRUE(chunk);
  EXPECT_EQ(device_.tier_info(Tier::ddr).used_bytes, 2 * kChunk);
  ASSERT_EQ(device_.map(offset(base, 2 * kChunk), chunk), DeviceStatus::ok);
  device_.unmap(offset(base, 2 * kChunk), 2 * kChunk);
  device_.release_physical(chunk);
  EXPECT_EQ(device_.tier_info(Tier::ddr).used_bytes, 0U);
  device_.release_address(base, 8 * kChunk);
  const DeviceCallCounts counts = device_.call_counts();
  EXPECT_EQ(counts.reserves, 1U);
  EXPECT_EQ(counts.creates, 1U);
  EXPECT_EQ(counts.maps, 1U);
  EXPECT_EQ(counts.unmaps, 1U);
  EXPECT_EQ(counts.releases, 1U);
  EXPECT_EQ(counts.address_releases, 1U);
  EXPECT_EQ(counts.invalid_calls, 0U);
}

TEST_P(SimDeviceVmm, PhysicalChunksCountAgainstCapacity) {
  PhysicalHandle a;
  PhysicalHandle b;
  void* segment = nullptr;
  ASSERT_EQ(device_.create_physical(Tier::ddr, 3 * kChunk, &a), DeviceStatus::ok);
  EXPECT_EQ(device_.create_physical(Tier::ddr, 2 * kChunk, &b), DeviceStatus::out_of_memory);
  EXPECT_EQ(device_.allocate_segment(Tier::ddr, 2 * kChunk, &segment), DeviceStatus::out_of_memory);
  ASSERT_EQ(device_.create_physical(Tier::ddr, kChunk, &b), DeviceStatus::ok);
  EXPECT_NE(a.id, b.id);
  device_.release_physical(a);
  device_.release_physical(b);
}

TEST_P(SimDeviceVmm, ChunksMapSideBySideAndUnmapTogether) {
  void* base = nullptr;
  PhysicalHandle first;
  PhysicalHandle second;
  ASSERT_EQ(device_.reserve_address(4 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, kChunk, &first), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, kChunk, &second), DeviceStatus::ok);
  ASSERT_EQ(device_.map(base, first), DeviceStatus::ok);
  ASSERT_EQ(device_.map(offset(base, kChunk), second), DeviceStatus::ok);
  device_.unmap(base, 4 * kChunk);  // covers both mappings and an unmapped tail
  EXPECT_EQ(device_.map(base, second), DeviceStatus::ok);
  device_.unmap(base, kChunk);
  EXPECT_EQ(device_.call_counts().invalid_calls, 0U);
  device_.release_physical(first);
  device_.release_physical(second);
  device_.release_address(base, 4 * kChunk);
}

TEST_P(SimDeviceVmm, InvalidUseAnswersInvalidArgument) {
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device_.reserve_address(4 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, 2 * kChunk, &chunk), DeviceStatus::ok);
  int outside = 0;
  void* ignored = nullptr;
  PhysicalHandle unused;
  EXPECT_EQ(device_.reserve_address(0, &ignored), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.reserve_address(kChunk + 4096, &ignored), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.reserve_address(kChunk, nullptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.create_physical(Tier::hbm, kChunk / 2, &unused),
            DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.create_physical(Tier::hbm, kChunk, nullptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(base, PhysicalHandle{12345}), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(&outside, chunk), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(offset(base, 4096), chunk), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(offset(base, 3 * kChunk), chunk), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(offset(base, 4 * kChunk), chunk), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.call_counts().invalid_calls, 10U);
  device_.release_physical(chunk);
  device_.release_address(base, 4 * kChunk);
}

TEST_P(SimDeviceVmm, DoubleMapIsRefused) {
  void* base = nullptr;
  PhysicalHandle big;
  PhysicalHandle small;
  ASSERT_EQ(device_.reserve_address(4 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, 2 * kChunk, &big), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, kChunk, &small), DeviceStatus::ok);
  ASSERT_EQ(device_.map(offset(base, kChunk), big), DeviceStatus::ok);
  EXPECT_EQ(device_.map(offset(base, kChunk), small), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(offset(base, 2 * kChunk), small), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_.map(base, big), DeviceStatus::invalid_argument);          // overlaps the start
  EXPECT_EQ(device_.map(base, small), DeviceStatus::ok);                      // just before it
  EXPECT_EQ(device_.map(offset(base, 3 * kChunk), small), DeviceStatus::ok);  // and after
  device_.release_address(base, 4 * kChunk);
  device_.release_physical(big);
  device_.release_physical(small);
}

TEST_P(SimDeviceVmm, BadUnmapsAndReleasesAreIgnoredAndCounted) {
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device_.reserve_address(4 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, 2 * kChunk, &chunk), DeviceStatus::ok);
  ASSERT_EQ(device_.map(base, chunk), DeviceStatus::ok);
  int outside = 0;
  device_.unmap(base, kChunk);                  // cuts the mapping in two
  device_.unmap(offset(base, kChunk), kChunk);  // likewise
  device_.unmap(&outside, kChunk);
  device_.unmap(base, 5 * kChunk);  // runs past the reservation
  device_.unmap(base, 0);
  device_.release_physical(PhysicalHandle{999});
  device_.release_address(base, 2 * kChunk);  // not the reserved size
  device_.release_address(&outside, kChunk);
  EXPECT_EQ(device_.call_counts().invalid_calls, 8U);
  device_.unmap(base, 2 * kChunk);
  device_.release_physical(chunk);
  device_.release_physical(chunk);  // twice
  EXPECT_EQ(device_.call_counts().invalid_calls, 9U);
  EXPECT_EQ(device_.tier_info(Tier::hbm).used_bytes, 0U);
  device_.release_address(base, 4 * kChunk);
  device_.release_address(base, 4 * kChunk);  // twice
  EXPECT_EQ(device_.call_counts().invalid_calls, 10U);
}

TEST_P(SimDeviceVmm, ReleasingAReservationUnmapsWhatIsLeft) {
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device_.reserve_address(2 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, kChunk, &chunk), DeviceStatus::ok);
  ASSERT_EQ(device_.map(base, chunk), DeviceStatus::ok);
  device_.release_address(base, 2 * kChunk);
  EXPECT_EQ(device_.call_counts().invalid_calls, 0U);
  void* again = nullptr;
  ASSERT_EQ(device_.reserve_address(2 * kChunk, &again), DeviceStatus::ok);
  EXPECT_EQ(device_.map(again, chunk), DeviceStatus::ok);
  device_.unmap(again, kChunk);
  device_.release_physical(chunk);
  device_.release_address(again, 2 * kChunk);
}

TEST_P(SimDeviceVmm, ReleasedChunkCannotBeMapped) {
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device_.reserve_address(kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device_.create_physical(Tier::hbm, kChunk, &chunk), DeviceStatus::ok);
  device_.release_physical(chunk);
  EXPECT_EQ(device_.map(base, chunk), DeviceStatus::invalid_argument);
  device_.release_address(base, kChunk);
}

INSTANTIATE_TEST_SUITE_P(Backings, SimDeviceVmm, ::testing::Values("backing=none", "backing=host"),
                         [](const auto& info) {
                           return info.param == "backing=host" ? std::string("host")
                                                               : std::string("none");
                         });

// Data written through one mapping survives unmapping and shows up when the chunk
// is mapped again at another address: the expandable strategy's stitching needs it.
TEST(SimDeviceVmmHost, DataSurvivesRemapAtAnotherAddress) {
  SimDevice device(parse_sim_spec("sim:hbm=16MiB,backing=host"));
  void* first = nullptr;
  void* second = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device.reserve_address(4 * kChunk, &first), DeviceStatus::ok);
  ASSERT_EQ(device.reserve_address(4 * kChunk, &second), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, 2 * kChunk, &chunk), DeviceStatus::ok);
  ASSERT_EQ(device.map(offset(first, kChunk), chunk), DeviceStatus::ok);
  auto* bytes = static_cast<unsigned char*>(offset(first, kChunk));
  for (std::size_t i = 0; i < 2 * kChunk; i += 4096) bytes[i] = static_cast<unsigned char>(i >> 12);
  device.unmap(offset(first, kChunk), 2 * kChunk);
  ASSERT_EQ(device.map(offset(second, 2 * kChunk), chunk), DeviceStatus::ok);
  const auto* moved = static_cast<const unsigned char*>(offset(second, 2 * kChunk));
  for (std::size_t i = 0; i < 2 * kChunk; i += 4096) {
    ASSERT_EQ(moved[i], static_cast<unsigned char>(i >> 12)) << "offset " << i;
  }
  device.unmap(offset(second, 2 * kChunk), 2 * kChunk);
  device.release_physical(chunk);
  device.release_address(first, 4 * kChunk);
  device.release_address(second, 4 * kChunk);
}

// One chunk mapped at two addresses shares its pages (both views see a write).
TEST(SimDeviceVmmHost, TwoMappingsOfOneChunkShareItsPages) {
  SimDevice device(parse_sim_spec("sim:hbm=16MiB,backing=host"));
  void* base = nullptr;
  PhysicalHandle chunk;
  ASSERT_EQ(device.reserve_address(2 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, kChunk, &chunk), DeviceStatus::ok);
  ASSERT_EQ(device.map(base, chunk), DeviceStatus::ok);
  ASSERT_EQ(device.map(offset(base, kChunk), chunk), DeviceStatus::ok);
  // volatile: the compiler cannot know the two addresses share a page.
  static_cast<volatile char*>(base)[100] = 'x';
  EXPECT_EQ(static_cast<volatile char*>(offset(base, kChunk))[100], 'x');
  device.release_address(base, 2 * kChunk);
  device.release_physical(chunk);
}

// Stitching: two chunks mapped side by side read as one contiguous range.
TEST(SimDeviceVmmHost, AdjacentChunksFormOneContiguousRange) {
  SimDevice device(parse_sim_spec("sim:hbm=16MiB,backing=host"));
  void* base = nullptr;
  PhysicalHandle low;
  PhysicalHandle high;
  ASSERT_EQ(device.reserve_address(2 * kChunk, &base), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, kChunk, &low), DeviceStatus::ok);
  ASSERT_EQ(device.create_physical(Tier::hbm, kChunk, &high), DeviceStatus::ok);
  ASSERT_EQ(device.map(base, low), DeviceStatus::ok);
  ASSERT_EQ(device.map(offset(base, kChunk), high), DeviceStatus::ok);
  std::memset(offset(base, kChunk - 10), 0x33, 20);  // across the seam
  EXPECT_EQ(static_cast<unsigned char*>(base)[kChunk + 9], 0x33);
  device.unmap(base, 2 * kChunk);
  device.release_physical(low);
  device.release_physical(high);
  device.release_address(base, 2 * kChunk);
}

// The seeds' "expandable_segments feature is not supported" device.
TEST(SimDeviceNoVmm, VirtualMemoryCallsAnswerNotSupported) {
  SimDevice device(parse_sim_spec("sim:vmm=false"));
  void* base = nullptr;
  PhysicalHandle chunk;
  EXPECT_FALSE(device.supports_virtual_memory());
  EXPECT_EQ(device.reserve_address(kChunk, &base), DeviceStatus::not_supported);
  EXPECT_EQ(device.create_physical(Tier::hbm, kChunk, &chunk), DeviceStatus::not_supported);
  EXPECT_EQ(device.map(base, chunk), DeviceStatus::not_supported);
  EXPECT_EQ(device.tier_info(Tier::hbm).used_bytes, 0U);
  void* segment = nullptr;
  EXPECT_EQ(device.allocate_segment(Tier::hbm, kChunk, &segment), DeviceStatus::ok);
  device.free_segment(Tier::hbm, segment, kChunk);
}

}  // namespace
}  // namespace npumem
