// The Ascend backend over the test double of libascendcl.so (tests/acl/): the spec,
// tiers from aclrtGetMemInfo, aclrtMalloc's padding, ACL errors in npumem's words,
// the current device per thread, the virtual-memory calls, and the message without
// a library.
#include "device/acl/acl_device.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "acl/test_device.h"
#include "device/acl/acl_spec.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

using testing::AclDouble;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string config_error_of(const std::string& spec) {
  try {
    parse_acl_spec(spec);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// acl:0 over the double, whose NPU has these capacities.
std::shared_ptr<Device> npu(std::uint64_t hbm, std::uint64_t ddr, const std::string& keys = "") {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = ddr;
  AclDouble::instance().configure(spec);
  return make_device("acl:0" + (keys.empty() && !AclDouble::instance().present()
                                    ? ",hbm=" + std::to_string(hbm)
                                    : keys));
}

std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint8_t seed) {
  std::vector<std::uint8_t> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(seed + i * 7);
  return data;
}

std::vector<std::uint8_t> read_back(Device& device, const void* ptr, std::size_t bytes) {
  std::vector<std::uint8_t> data(bytes);
  device.copy(data.data(), Tier::hbm, ptr, Tier::hbm, bytes);
  return data;
}

TEST(AclSpec, IndexAndKeys) {
  EXPECT_EQ(parse_acl_spec("acl").ordinal, 0);
  EXPECT_EQ(parse_acl_spec("acl:3").ordinal, 3);
  const AclSpec spec = parse_acl_spec("acl:1,hbm=16GiB,ddr=0,vmm=off");
  EXPECT_EQ(spec.ordinal, 1);
  EXPECT_EQ(spec.hbm_limit, 16 * GiB);
  EXPECT_FALSE(spec.ddr);
  EXPECT_FALSE(spec.virtual_memory);
  EXPECT_TRUE(parse_acl_spec("acl:0,vmm=auto").virtual_memory);
}

TEST(AclSpec, BadSpecsAreNamed) {
  EXPECT_TRUE(contains(config_error_of("acl:"), "no device index"));
  EXPECT_TRUE(contains(config_error_of("acl:x"), "'x' is not a device index"));
  EXPECT_TRUE(contains(config_error_of("acl:-1"), "is not a device index"));
  EXPECT_TRUE(contains(config_error_of("aclx"), "'acl', 'acl:N'"));
  EXPECT_TRUE(contains(config_error_of("acl:0,hbm=lots"), "key 'hbm'"));
  EXPECT_TRUE(contains(config_error_of("acl:0,hbm=0"), "cannot be 0"));
  EXPECT_TRUE(contains(config_error_of("acl:0,vmm=on"), "auto, off"));
  EXPECT_TRUE(contains(config_error_of("acl:0,colour=red"), "unknown key 'colour'"));
  EXPECT_TRUE(contains(config_error_of("acl:0,vmm=off,vmm=off"), "given twice"));
  EXPECT_TRUE(contains(config_error_of("acl:0,hbm"), "not key=value"));
}

static_assert(acl::malloc_cost(2 * MiB) == 4 * MiB, "aclrtMalloc.md: 2 MiB asked costs 4 MiB");
static_assert(acl::malloc_cost(2 * MiB - acl::kMallocPadding) == 2 * MiB);

TEST(AclDevice, TiersComeFromGetMemInfoAndLimits) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double's NPU";
  auto device = npu(1 * GiB, 2 * GiB);
  EXPECT_EQ(device->name(), "acl:0");
  EXPECT_EQ(device->tier_info(Tier::hbm).capacity_bytes, 1 * GiB);
  EXPECT_EQ(device->tier_info(Tier::ddr).capacity_bytes, 2 * GiB);
  EXPECT_EQ(device->tier_info(Tier::hbm).granularity_bytes, 2 * MiB);
  device.reset();
  auto limited = npu(1 * GiB, 2 * GiB, ",hbm=256MiB,ddr=0");
  EXPECT_EQ(limited->tier_info(Tier::hbm).capacity_bytes, 256 * MiB);
  EXPECT_FALSE(limited->has_tier(Tier::ddr));
}

TEST(AclDevice, ChipWithoutDdrHasOneTier) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double's NPU";
  auto device = npu(1 * GiB, 0);
  EXPECT_TRUE(device->has_tier(Tier::hbm));
  EXPECT_FALSE(device->has_tier(Tier::ddr));
}

// Without the padding rule a 2 MiB segment costs two huge pages and the fourth of
// four would not fit.
TEST(AclDevice, SegmentsFillTheNpuExactlyDespitePadding) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double's NPU";
  auto device = npu(8 * MiB, 0);
  std::vector<void*> segments;
  for (int i = 0; i < 4; ++i) {
    void* ptr = nullptr;
    ASSERT_EQ(device->allocate_segment(Tier::hbm, 2 * MiB, &ptr), DeviceStatus::ok) << i;
    segments.push_back(ptr);
  }
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 8 * MiB);
  void* more = nullptr;
  EXPECT_EQ(device->allocate_segment(Tier::hbm, 2 * MiB, &more), DeviceStatus::out_of_memory);
  for (void* ptr : segments) device->free_segment(Tier::hbm, ptr, 2 * MiB);
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 0u);
}

TEST(AclDevice, SegmentsHoldData) {
  auto device = npu(64 * MiB, 0);
  void* ptr = nullptr;
  ASSERT_EQ(device->allocate_segment(Tier::hbm, 4 * MiB, &ptr), DeviceStatus::ok);
  const auto data = pattern(4 * MiB, 3);
  device->copy(ptr, Tier::hbm, data.data(), Tier::hbm, data.size());
  EXPECT_EQ(read_back(*device, ptr, data.size()), data);
  device->free_segment(Tier::hbm, ptr, 4 * MiB);
}

TEST(AclDevice, BadSizesAreRefusedByStatus) {
  auto device = npu(64 * MiB, 0);
  void* ptr = nullptr;
  EXPECT_EQ(device->allocate_segment(Tier::hbm, 0, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device->allocate_segment(Tier::hbm, 3 * MiB, &ptr), DeviceStatus::invalid_argument);
  EXPECT_EQ(device->allocate_segment(Tier::ddr, 2 * MiB, &ptr), DeviceStatus::invalid_argument);
}

// The NPU says no below npumem's limit: the ACL code and message reach the OOM report.
TEST(AclDevice, AclErrorsReachTheOutOfMemoryReport) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double's fault controls";
  auto device = npu(64 * MiB, 0, ",hbm=64MiB");
  FaultSpec faults;
  faults.every = 1;
  faults.ops = static_cast<std::uint8_t>(FaultOp::segment);
  Allocator allocator(device);
  ASSERT_TRUE(AclDouble::instance().set_faults(faults));
  try {
    allocator.allocate(4 * MiB);
    FAIL() << "the allocation should fail";
  } catch (const OutOfMemory& error) {
    const std::string text = error.what();
    EXPECT_TRUE(contains(text,
                         "device: aclrtMalloc: ACL error 207001 "
                         "(ACL_ERROR_RT_MEMORY_ALLOCATION): aclrtMalloc: cannot allocate"))
        << text;
  }
  EXPECT_TRUE(contains(device->last_error(), "207001"));
}

// ACL's current device is per thread; the double refuses calls on a thread without one.
TEST(AclDevice, EveryThreadMayAllocate) {
  auto device = npu(64 * MiB, 0);
  std::vector<std::thread> threads;
  std::vector<DeviceStatus> results(4);
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      void* ptr = nullptr;
      results[i] = device->allocate_segment(Tier::hbm, 2 * MiB, &ptr);
      if (results[i] == DeviceStatus::ok) device->free_segment(Tier::hbm, ptr, 2 * MiB);
    });
  }
  for (auto& thread : threads) thread.join();
  for (DeviceStatus status : results) EXPECT_EQ(status, DeviceStatus::ok);
}

TEST(AclDevice, SetDeviceCallsAreMatchedByResets) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double";
  {
    auto device = npu(64 * MiB, 0);
    void* ptr = nullptr;
    ASSERT_EQ(device->allocate_segment(Tier::hbm, 2 * MiB, &ptr), DeviceStatus::ok);
    EXPECT_GT(AclDouble::instance().device_refs(), 0);
    device->free_segment(Tier::hbm, ptr, 2 * MiB);
  }
  EXPECT_EQ(AclDouble::instance().device_refs(), 0);
  EXPECT_FALSE(AclDouble::instance().initialised());  // npumem started ACL, so it finalized it
}

TEST(AclDevice, VirtualMemoryRoundTrip) {
  auto device = npu(64 * MiB, 0);
  ASSERT_TRUE(device->supports_virtual_memory());
  void* base = nullptr;
  ASSERT_EQ(device->reserve_address(8 * MiB, &base), DeviceStatus::ok);
  PhysicalHandle first;
  PhysicalHandle second;
  ASSERT_EQ(device->create_physical(Tier::hbm, 2 * MiB, &first), DeviceStatus::ok);
  ASSERT_EQ(device->create_physical(Tier::hbm, 2 * MiB, &second), DeviceStatus::ok);
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 4 * MiB);
  char* at = static_cast<char*>(base);
  ASSERT_EQ(device->map(at, first), DeviceStatus::ok);
  ASSERT_EQ(device->map(at + 2 * MiB, second), DeviceStatus::ok);
  const auto data = pattern(4 * MiB, 9);
  device->copy(at, Tier::hbm, data.data(), Tier::hbm, data.size());
  device->unmap(at, 4 * MiB);  // two mappings, one aclrtUnmapMem each
  ASSERT_EQ(device->map(at, second), DeviceStatus::ok);
  ASSERT_EQ(device->map(at + 2 * MiB, first), DeviceStatus::ok);
  const auto swapped = read_back(*device, at, 4 * MiB);
  EXPECT_TRUE(std::equal(data.begin() + 2 * MiB, data.end(), swapped.begin()));
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 2 * MiB, swapped.begin() + 2 * MiB));
  device->unmap(at, 4 * MiB);
  device->release_physical(first);
  device->release_physical(second);
  device->release_address(base, 8 * MiB);
  EXPECT_EQ(device->tier_info(Tier::hbm).used_bytes, 0u);
  EXPECT_TRUE(device->last_error().empty()) << device->last_error();
}

TEST(AclDevice, VmmOffLeavesTheCallsUnused) {
  auto device = npu(64 * MiB, 0, ",vmm=off");
  EXPECT_FALSE(device->supports_virtual_memory());
  void* base = nullptr;
  EXPECT_EQ(device->reserve_address(2 * MiB, &base), DeviceStatus::not_supported);
}

TEST(AclDevice, MissingNpuIsNamed) {
  if (!AclDouble::instance().present()) GTEST_SKIP() << "needs the test double's NPU";
  try {
    npu(64 * MiB, 0).reset();
    make_device("acl:5");
    FAIL() << "acl:5 should not exist";
  } catch (const ConfigError& error) {
    EXPECT_TRUE(contains(error.what(), "no NPU 5 (ACL reports 1 NPU, index 0; library "))
        << error.what();
  }
}

// Run in a child process: the library is loaded once per process.
TEST(AclDeviceDeathTest, WithoutTheLibraryTheSpecSaysSo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, nothing loaded yet
  EXPECT_EXIT(
      {
        setenv("NPUMEM_ACL_LIBRARY", "/nonexistent/libascendcl.so", 1);
        try {
          make_device("acl:0");
        } catch (const ConfigError& error) {
          std::fputs(error.what(), stderr);
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0),
      "bad device spec 'acl:0': no usable libascendcl.so .Ascend CANN is not installed or not "
      "found; NPUMEM_ACL_LIBRARY names it.. Tried:\n  /nonexistent/libascendcl.so");
}

}  // namespace
}  // namespace npumem
