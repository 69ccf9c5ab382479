// npumem_malloc / npumem_free and the process-wide allocators behind them. The
// allocator of a device index is made once per process, so each test uses its own
// index and sets the environment before that index's first use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "acl/test_device.h"
#include "capi/device_registry.h"
#include "capi/handle.h"
#include "device/sim/sim_device.h"
#include "npumem/npumem.h"
#include "npumem/units.h"

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

npumem::Allocator& process_wide(int device) {
  npumem_allocator_t* handle = nullptr;
  EXPECT_EQ(npumem_device_allocator(device, &handle), NPUMEM_OK) << npumem_last_error();
  return *handle->allocator;
}

void set_environment(const char* device, const char* conf) {
  ASSERT_EQ(setenv("NPUMEM_DEVICE", device, 1), 0);
  ASSERT_EQ(setenv("NPUMEM_ALLOC_CONF", conf, 1), 0);
}

void clear_environment() {
  unsetenv("NPUMEM_DEVICE");
  unsetenv("NPUMEM_ALLOC_CONF");
}

TEST(CapiPluggable, MallocUsesTheAllocatorMadeFromTheEnvironment) {
  set_environment("sim:hbm=256MiB,ddr=0", "granule:4096");
  void* ptr = npumem_malloc(1000, 5, nullptr);
  clear_environment();
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  EXPECT_STREQ(npumem_last_error(), "");

  npumem::Allocator& allocator = process_wide(5);
  EXPECT_EQ(allocator.device().name(), "sim:5") << "the index names the virtual NPU";
  EXPECT_EQ(allocator.device().tier_info(npumem::Tier::hbm).capacity_bytes, 256 * npumem::MiB);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 4096) << "NPUMEM_ALLOC_CONF granule";
  EXPECT_EQ(allocator.allocation_size(ptr), 1000U);

  npumem_free(ptr, 1000, 5, nullptr);
  EXPECT_STREQ(npumem_last_error(), "");
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
}

// PyTorch's pluggable allocator passes no pool: npumem_set_pool routes a model's tensors.
TEST(CapiPluggable, MallocGoesToThePoolThisThreadSet) {
  ASSERT_EQ(npumem_init(12, "sim:hbm=256MiB,ddr=0", ""), NPUMEM_OK) << npumem_last_error();
  npumem::Allocator& allocator = process_wide(12);
  allocator.create_pool("model_a", 64 * npumem::MiB);
  ASSERT_EQ(npumem_set_pool("model_a"), NPUMEM_OK);
  void* ptr = npumem_malloc(1000, 12, nullptr);
  ASSERT_EQ(npumem_set_pool(nullptr), NPUMEM_OK);
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  for (const npumem::PoolInfo& pool : allocator.pools()) {
    EXPECT_EQ(pool.stats.requested_bytes.all.current, pool.name == "model_a" ? 1000 : 0)
        << pool.name;
  }
  npumem_free(ptr, 1000, 12, nullptr);
  EXPECT_STREQ(npumem_last_error(), "");
}

TEST(CapiPluggable, MallocReturnsNullWithTheReasonOnOutOfMemory) {
  set_environment("sim:hbm=64MiB,ddr=0", "");
  EXPECT_EQ(npumem_malloc(128 << 20, 6, nullptr), nullptr);
  clear_environment();
  EXPECT_TRUE(contains(npumem_last_error(), "128 MiB")) << npumem_last_error();
  EXPECT_EQ(process_wide(6).stats().num_ooms, 1);
}

TEST(CapiPluggable, FreeOfADeadPointerSetsTheErrorAndChangesNothing) {
  set_environment("sim:hbm=64MiB", "");
  void* kept = npumem_malloc(4096, 7, nullptr);
  void* freed = npumem_malloc(4096, 7, nullptr);
  clear_environment();
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(freed, nullptr);
  npumem_free(freed, 4096, 7, nullptr);
  const npumem::Stats before = process_wide(7).stats();

  npumem_free(freed, 4096, 7, nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "double free")) << npumem_last_error();
  EXPECT_EQ(process_wide(7).stats().allocated_bytes.all.current,
            before.allocated_bytes.all.current);
  npumem_free(kept, 4096, 7, nullptr);
  EXPECT_STREQ(npumem_last_error(), "");
}

TEST(CapiPluggable, FreeOnADeviceWithoutAllocatorSetsTheError) {
  int local = 0;
  npumem_free(&local, sizeof local, 40, nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "no allocator yet")) << npumem_last_error();
  npumem_free(nullptr, 0, 40, nullptr);
  EXPECT_STREQ(npumem_last_error(), "") << "freeing NULL is a no-op";
}

TEST(CapiPluggable, NegativeSizeIsRefused) {
  EXPECT_EQ(npumem_malloc(-1, 8, nullptr), nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "size -1 is negative")) << npumem_last_error();
}

TEST(CapiPluggable, BadEnvironmentIsNamedAndTheIndexStaysFree) {
  set_environment("gpu:0", "");
  EXPECT_EQ(npumem_malloc(64, 9, nullptr), nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "NPUMEM_DEVICE: bad device spec 'gpu:0'"))
      << npumem_last_error();
  set_environment("sim", "granule:abc");
  EXPECT_EQ(npumem_malloc(64, 9, nullptr), nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "NPUMEM_ALLOC_CONF")) << npumem_last_error();
  // Refused only as the allocator is made, and named the same way.
  set_environment("sim", "strategy:static");
  EXPECT_EQ(npumem_malloc(64, 9, nullptr), nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "NPUMEM_ALLOC_CONF: static strategy needs static_size"))
      << npumem_last_error();
  clear_environment();
  EXPECT_EQ(npumem_init(9, "sim:hbm=1GiB", ""), NPUMEM_OK) << npumem_last_error();
}

// `NPUMEM_DEVICE= cmd` (set, empty) is read as unset: the default, the virtual NPU.
TEST(CapiPluggable, AnEmptyDeviceVariableIsTheDefault) {
  set_environment("", "");
  void* p = npumem_malloc(64, 20, nullptr);
  ASSERT_NE(p, nullptr) << npumem_last_error();
  EXPECT_EQ(process_wide(20).device().name(), "sim:20");
  npumem_free(p, 64, 20, nullptr);
  clear_environment();
}

TEST(CapiPluggable, AFreeOnTheWrongDeviceNamesBothAndChangesNothing) {
  void* p = npumem_malloc(4096, 21, nullptr);
  ASSERT_NE(p, nullptr) << npumem_last_error();
  ASSERT_NE(npumem_malloc(64, 22, nullptr), nullptr) << npumem_last_error();
  npumem_free(p, 4096, 22, nullptr);
  EXPECT_TRUE(contains(npumem_last_error(), "was allocated on device 21, not device 22"))
      << npumem_last_error();
  EXPECT_TRUE(process_wide(21).owns(p));
  npumem_free(p, 4096, 21, nullptr);
  EXPECT_STREQ(npumem_last_error(), "");
}

TEST(CapiPluggable, BadSpecIsQuotedAsWrittenWithoutTheIndexAppended) {
  EXPECT_NE(npumem_init(11, "sim:hbm=bogus", ""), NPUMEM_OK);
  EXPECT_TRUE(contains(npumem_last_error(), "bad device spec 'sim:hbm=bogus':"))
      << npumem_last_error();
  EXPECT_FALSE(contains(npumem_last_error(), "id=11")) << npumem_last_error();
  EXPECT_NE(npumem_init(11, "acl,bogus=1", ""), NPUMEM_OK);
  EXPECT_TRUE(contains(npumem_last_error(), "bad device spec 'acl,bogus=1':"))
      << npumem_last_error();
}

TEST(CapiPluggable, InitComesFirstAndOnlyOnce) {
  ASSERT_EQ(npumem_init(10, "sim:hbm=128MiB,ddr=0", "spill_to_ddr:false"), NPUMEM_OK)
      << npumem_last_error();
  EXPECT_EQ(process_wide(10).device().tier_info(npumem::Tier::hbm).capacity_bytes,
            128 * npumem::MiB);
  EXPECT_FALSE(process_wide(10).config().spill_to_ddr);
  void* ptr = npumem_malloc(1 << 20, 10, nullptr);
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(npumem_init(10, "sim", ""), NPUMEM_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(npumem_last_error(), "device 10 has an allocator already"));
  npumem_free(ptr, 1 << 20, 10, nullptr);
}

TEST(CapiPluggable, InitWithNullReadsTheEnvironment) {
  set_environment("host", "granule:8192");
  ASSERT_EQ(npumem_init(11, nullptr, nullptr), NPUMEM_OK) << npumem_last_error();
  clear_environment();
  EXPECT_EQ(process_wide(11).device().name(), "host");
  EXPECT_EQ(process_wide(11).config().granule, 8192U);
}

TEST(CapiPluggable, WithoutEnvironmentTheDefaultIsTheVirtualNpu) {
  clear_environment();
  void* ptr = npumem_malloc(64, 12, nullptr);
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  EXPECT_EQ(process_wide(12).device().name(), "sim:12");
  EXPECT_EQ(process_wide(12).config().granule, npumem::Config{}.granule);
  npumem_free(ptr, 64, 12, nullptr);
}

TEST(CapiPluggable, ProcessWideAllocatorsCannotBeDestroyed) {
  npumem_allocator_t* handle = nullptr;
  ASSERT_EQ(npumem_device_allocator(13, &handle), NPUMEM_OK);
  EXPECT_EQ(npumem_allocator_destroy(handle), NPUMEM_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(npumem_last_error(), "process-wide")) << npumem_last_error();
  npumem_allocator_t* again = nullptr;
  ASSERT_EQ(npumem_device_allocator(13, &again), NPUMEM_OK);
  EXPECT_EQ(again, handle);
}

TEST(CapiPluggable, HandleCallsWorkOnTheProcessWideAllocator) {
  void* ptr = npumem_malloc(3 << 20, 14, nullptr);
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  npumem_allocator_t* handle = nullptr;
  ASSERT_EQ(npumem_device_allocator(14, &handle), NPUMEM_OK);
  int64_t allocated = 0;
  ASSERT_EQ(npumem_stat(handle, "allocated_bytes.all.current", &allocated), NPUMEM_OK);
  EXPECT_EQ(allocated, 3 << 20);
  EXPECT_EQ(npumem_deallocate(handle, ptr), NPUMEM_OK) << "one allocator, two ways in";
  size_t released = 0;
  ASSERT_EQ(npumem_empty_cache(handle, &released), NPUMEM_OK);
  EXPECT_GT(released, 0U);
}

// PyTorch passes its stream to npumem_malloc; tensor.record_stream(s) reaches
// npumem_record_stream (the pluggable allocator's record_stream_fn, without a device).
// The virtual NPU keeps a kernel "running" on a stream.
TEST(CapiPluggable, StreamsOrderReuseAndRecordStreamAddsOne) {
  ASSERT_EQ(npumem_init(15, "sim:hbm=256MiB,ddr=0", ""), NPUMEM_OK) << npumem_last_error();
  auto& npu = dynamic_cast<npumem::SimDevice&>(process_wide(15).device());
  void* compute = reinterpret_cast<void*>(std::uintptr_t{0x10});
  void* copy = reinterpret_cast<void*>(std::uintptr_t{0x20});
  const auto bytes = static_cast<ssize_t>(8 * npumem::MiB);
  void* a = npumem_malloc(bytes, 15, compute);
  ASSERT_NE(a, nullptr) << npumem_last_error();
  npumem_record_stream(a, copy);
  EXPECT_STREQ(npumem_last_error(), "");
  npu.launch_kernel(npumem::StreamId{0x20});  // the copy stream still reads `a`
  npumem_free(a, bytes, 15, compute);
  void* b = npumem_malloc(bytes, 15, compute);
  EXPECT_NE(b, a) << "the copy stream's kernel still runs";
  npu.finish_kernel(npumem::StreamId{0x20});
  npumem_free(b, bytes, 15, compute);
  void* c = npumem_malloc(bytes, 15, copy);
  void* d = npumem_malloc(bytes, 15, copy);
  EXPECT_TRUE(c == a || d == a) << "free for every stream once the copy finished";
  npumem_free(c, bytes, 15, copy);
  npumem_free(d, bytes, 15, copy);

  npumem_record_stream(a, copy);
  EXPECT_TRUE(contains(npumem_last_error(), "is not live on any device")) << npumem_last_error();
}

// torch_npu makes the allocator through npumem_malloc: the fallback warning goes to
// stderr (and stays readable through npumem_warnings).
TEST(CapiPluggable, AllocatorMadeByMallocPrintsItsWarnings) {
  set_environment("sim:hbm=256MiB,vmm=false", "expandable_segments:true");
  ::testing::internal::CaptureStderr();
  void* ptr = npumem_malloc(4096, 16, nullptr);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  clear_environment();
  ASSERT_NE(ptr, nullptr) << npumem_last_error();
  EXPECT_TRUE(contains(printed,
                       "npumem: device 16: expandable_segments feature is not supported by "
                       "device sim:16"))
      << printed;
  EXPECT_TRUE(contains(printed, "falling back to the caching strategy")) << printed;
  ::testing::internal::CaptureStderr();
  npumem_free(ptr, 4096, 16, nullptr);
  npumem_free(npumem_malloc(4096, 16, nullptr), 4096, 16, nullptr);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "once, when it is made";
}

TEST(SpecForDevice, SpecsWithoutAnIndexGetTheDeviceIndex) {
  using npumem::capi::spec_for_device;
  EXPECT_EQ(spec_for_device("cuda", 3), "cuda:3");
  EXPECT_EQ(spec_for_device("sim", 3), "sim:id=3");
  EXPECT_EQ(spec_for_device("sim:hbm=1GiB", 3), "sim:hbm=1GiB,id=3");
  EXPECT_EQ(spec_for_device("acl", 3), "acl:3");
  EXPECT_EQ(spec_for_device("acl,vmm=off", 3), "acl:3,vmm=off");
}

TEST(SpecForDevice, SpecsThatNameTheirDeviceAreKept) {
  using npumem::capi::spec_for_device;
  EXPECT_EQ(spec_for_device("cuda:1", 3), "cuda:1");
  EXPECT_EQ(spec_for_device("sim:hbm=1GiB,id=7", 3), "sim:hbm=1GiB,id=7");
  EXPECT_EQ(spec_for_device("sim:id=0", 3), "sim:id=0");
  EXPECT_EQ(spec_for_device("host", 3), "host");
  EXPECT_EQ(spec_for_device("acl:1,hbm=1GiB", 3), "acl:1,hbm=1GiB");
}

// The torch_npu route: npumem_malloc / npumem_free on an Ascend NPU (the test double of
// libascendcl.so here), the memory reachable through ACL's copy.
TEST(PluggableOnAcl, MallocAndFreeOnTheNpu) {
  npumem::testing::AclDouble::instance().configure({});
  ASSERT_EQ(npumem_init(41, "acl:0", "expandable_segments:true"), NPUMEM_OK) << npumem_last_error();
  void* p = npumem_malloc(static_cast<ssize_t>(3 * npumem::MiB), 41, nullptr);
  ASSERT_NE(p, nullptr) << npumem_last_error();
  npumem_allocator_t* handle = nullptr;
  ASSERT_EQ(npumem_device_allocator(41, &handle), NPUMEM_OK);
  npumem::Device& npu = handle->allocator->device();
  EXPECT_EQ(npu.name(), "acl:0");
  EXPECT_TRUE(handle->allocator->warnings().empty());
  npumem::testing::fill(npu, p, 0x3C, 3 * npumem::MiB);
  EXPECT_TRUE(npumem::testing::holds(npu, p, 0x3C, 3 * npumem::MiB));
  npumem_free(p, static_cast<ssize_t>(3 * npumem::MiB), 41, nullptr);
  EXPECT_EQ(handle->allocator->stats().allocated_bytes.all.current, 0);
}

}  // namespace
