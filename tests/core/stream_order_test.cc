// Stream-ordered reuse on the virtual NPU and on acl:0 over the test double of
// libascendcl.so (aclrtCreateEvent / aclrtRecordEvent / aclrtQueryEventStatus /
// aclrtDestroyEvent), whose streams run simulated kernels: a block freed on one stream
// is reused by that stream at once and by another only after the event recorded at
// the free has completed.
#include "core/stream_order.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "acl/test_device.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

constexpr StreamId kCompute = 7;
constexpr StreamId kCopy = 9;

using testing::TestDevice;

class StreamOrder : public ::testing::TestWithParam<testing::Backend> {
 protected:
  void SetUp() override {
    if (!testing::controls_available(GetParam())) GTEST_SKIP() << "needs simulated kernels";
  }
  TestDevice npu() const {
    SimSpec spec;
    spec.hbm_bytes = 1 * GiB;
    spec.ddr_bytes = 0;
    return TestDevice(GetParam(), spec);
  }
};

TEST_P(StreamOrder, FreedBlockWaitsForItsStreamBeforeAnotherStreamTakesIt) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  void* warmup = allocator.allocate(1 * MiB, kCopy);  // two streams: ordering is on
  allocator.deallocate(warmup);
  void* a = allocator.allocate(8 * MiB, kCompute);
  device.launch_kernel(kCompute);  // a kernel using `a` is still running
  allocator.deallocate(a);
  void* b = allocator.allocate(8 * MiB, kCopy);
  EXPECT_NE(b, a) << "reused while the compute stream's kernel still runs";
  device.finish_kernel(kCompute);
  void* c = allocator.allocate(8 * MiB, kCopy);
  EXPECT_EQ(c, a) << "the event completed: the block is free for every stream";
  allocator.deallocate(b);
  allocator.deallocate(c);
  allocator.empty_cache();
  EXPECT_EQ(device.live_events(), 0u);
}

TEST_P(StreamOrder, ItsOwnStreamReusesItAtOnce) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  allocator.deallocate(allocator.allocate(1 * MiB, kCopy));
  void* a = allocator.allocate(8 * MiB, kCompute);
  device.launch_kernel(kCompute);
  allocator.deallocate(a);
  void* again = allocator.allocate(8 * MiB, kCompute);
  EXPECT_EQ(again, a) << "work on its own stream is ordered behind the free";
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, static_cast<std::int64_t>(8 * MiB));
  allocator.deallocate(again);
  device.finish_kernel(kCompute);
}

TEST_P(StreamOrder, RecordStreamMakesEvenItsOwnStreamWait) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  void* a = allocator.allocate(8 * MiB, kCompute);
  allocator.record_stream(a, kCopy);  // a copy kernel reads `a` on another stream
  device.launch_kernel(kCopy);
  allocator.deallocate(a);
  void* b = allocator.allocate(8 * MiB, kCompute);
  EXPECT_NE(b, a) << "the copy stream still uses it";
  device.finish_kernel(kCopy);
  allocator.deallocate(b);
  void* c = allocator.allocate(8 * MiB, kCompute);
  void* d = allocator.allocate(8 * MiB, kCompute);
  EXPECT_TRUE(c == a || d == a) << "free again once the copy finished";
  allocator.deallocate(c);
  allocator.deallocate(d);
}

// A block freed behind its streams' work is freed: a second free was "not allocated by
// this allocator".
TEST_P(StreamOrder, ASecondFreeOfAHeldBlockIsADoubleFree) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  void* a = allocator.allocate(8 * MiB, kCompute);
  allocator.record_stream(a, kCopy);
  device.launch_kernel(kCopy);
  allocator.deallocate(a);
  try {
    allocator.deallocate(a);
    FAIL() << "expected InvalidPointer";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("double free"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("waits for its streams"), std::string::npos) << e.what();
  }
  device.finish_kernel(kCopy);
}

// Until a second stream allocates no event is recorded, so a block the first stream
// freed may still be in use by its kernels when the second stream arrives.
TEST_P(StreamOrder, BlocksFreedBeforeASecondStreamWaitForTheFirst) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  void* a = allocator.allocate(8 * MiB, kCompute);
  device.launch_kernel(kCompute);
  allocator.deallocate(a);
  EXPECT_EQ(device.live_events(), 0u) << "one stream so far";
  void* b = allocator.allocate(8 * MiB, kCopy);
  EXPECT_NE(b, a) << "reused while the compute stream's kernel still runs";
  device.finish_kernel(kCompute);
  const std::int64_t reserved = allocator.stats().reserved_bytes.all.current;
  void* c = allocator.allocate(8 * MiB, kCopy);  // b's segment may have room left
  void* d = allocator.allocate(8 * MiB, kCopy);
  EXPECT_TRUE(c == a || d == a) << "the kernel finished: free for every stream";
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, reserved);
  allocator.deallocate(b);
  allocator.deallocate(c);
  allocator.deallocate(d);
  allocator.empty_cache();
  EXPECT_EQ(device.live_events(), 0u);
}

// Several threads: each has a front cache that keeps its freed blocks for it alone,
// without the allocator's lock; it must not hand one to another stream either.
TEST_P(StreamOrder, FrontCachesHandNoBlockToAnotherStream) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  // This thread's cache first, then another's: a lone thread's cache (or one this
  // thread took over from an exited one) works under the allocator's lock instead.
  allocator.deallocate(allocator.allocate(4096, kCompute));
  std::thread([&] { allocator.deallocate(allocator.allocate(4096, kCompute)); }).join();
  for (const bool ordered : {false, true}) {
    void* a = allocator.allocate(4096, kCompute);
    device.launch_kernel(kCompute);
    allocator.deallocate(a);
    void* b = allocator.allocate(4096, kCopy);
    EXPECT_NE(b, a) << (ordered ? "ordered" : "the second stream's first allocation");
    if (ordered) {
      void* again = allocator.allocate(4096, kCompute);
      EXPECT_EQ(again, a) << "its own stream takes it at once";
      allocator.deallocate(again);
    }
    device.finish_kernel(kCompute);
    allocator.deallocate(b);
  }
  allocator.empty_cache();
  EXPECT_EQ(device.live_events(), 0u);
}

// Once streams are ordered, a front cache still hands a stream back what it freed; a
// block leaving the cache (here: a snapshot returns kept blocks to the pools) waits
// behind an event on its stream like any freed block, so another stream gets it only
// after that stream's work is done.
TEST_P(StreamOrder, KeptBlocksLeaveFrontCachesBehindEvents) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  allocator.deallocate(allocator.allocate(4096, kCopy));  // ordering starts at kCopy
  void* a = allocator.allocate(4096, kCompute);
  device.launch_kernel(kCompute);
  allocator.deallocate(a);
  void* again = allocator.allocate(4096, kCompute);
  EXPECT_EQ(again, a) << "its own stream takes it back at once";
  allocator.deallocate(again);  // kept by the cache, the kernel still running
  (void)allocator.snapshot();
  void* other = allocator.allocate(4096, kCopy);
  EXPECT_NE(other, a) << "another stream before the kernel finished";
  device.finish_kernel(kCompute);
  allocator.deallocate(other);
  allocator.empty_cache();
  EXPECT_EQ(device.live_events(), 0u);
}

// Memory held behind a running kernel is not lost: before giving up with OutOfMemory
// the allocator waits for the work (on the virtual NPU, simulated time passes).
TEST_P(StreamOrder, OutOfMemoryWaitsForHeldBlocksFirst) {
  if (GetParam() == testing::Backend::acl) {
    GTEST_SKIP() << "the double's kernels finish only when a test says so: waiting would hang";
  }
  SimSpec spec;
  spec.hbm_bytes = 64 * MiB;
  spec.ddr_bytes = 0;
  const TestDevice device(GetParam(), spec);
  Allocator allocator(device.device());
  void* a = allocator.allocate(40 * MiB, kCompute);
  device.launch_kernel(kCompute);
  allocator.deallocate(a);
  void* b = allocator.allocate(40 * MiB, kCopy);  // no room beside the held block
  EXPECT_EQ(b, a) << "given once the compute stream's work was waited for";
  EXPECT_EQ(allocator.stats().num_ooms, 0);
  allocator.deallocate(b);
}

// PyTorch's default stream is 0 (a null cudaStream_t / aclrtStream): it is a stream
// like any other.
TEST_P(StreamOrder, TheDefaultStreamIsAStreamToo) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  void* a = allocator.allocate(8 * MiB, 0);
  device.launch_kernel(0);
  allocator.deallocate(a);
  void* b = allocator.allocate(8 * MiB, kCopy);
  EXPECT_NE(b, a) << "reused while the default stream's kernel still runs";
  device.finish_kernel(0);
  allocator.deallocate(b);
}

TEST_P(StreamOrder, OneStreamRecordsNoEvents) {
  const TestDevice device = npu();
  Allocator allocator(device.device());
  for (int i = 0; i < 10; ++i) allocator.deallocate(allocator.allocate(4 * MiB, kCompute));
  device.launch_kernel(kCompute);
  void* a = allocator.allocate(4 * MiB, kCompute);
  allocator.deallocate(a);
  EXPECT_EQ(device.live_events(), 0u);
  EXPECT_EQ(allocator.allocate(4 * MiB, kCompute), a);
}

// Once their events completed, held blocks go back to the pool, coalesce and serve by
// best fit as without a second stream. A held block was taken back unsplit first (up to
// 1/8 larger), and a stream-0 workload reserved 2.4x more after another stream's one
// allocation (a cold trial).
std::int64_t large_pool_peak_reserved(const TestDevice& device, bool second_stream) {
  Allocator allocator(device.device());
  if (second_stream) allocator.allocate(512, kCopy);  // small pool: a segment of its own
  for (int iteration = 0; iteration < 6; ++iteration) {
    std::vector<void*> live;
    for (std::size_t j = 6; j <= 10; ++j) live.push_back(allocator.allocate(j * 300'000, 0));
    for (void* ptr : live) allocator.deallocate(ptr);
  }
  return allocator.stats().reserved_bytes.by_kind[static_cast<int>(PoolKind::large)].peak;
}

TEST_P(StreamOrder, CompletedFreesServeAsWithOneStream) {
  const TestDevice device = npu();
  EXPECT_EQ(large_pool_peak_reserved(device, true), large_pool_peak_reserved(device, false));
}

TEST_P(StreamOrder, HeldBlocksAndEventsGoWithTheAllocator) {
  const TestDevice device = npu();
  {
    Allocator allocator(device.device());
    allocator.deallocate(allocator.allocate(1 * MiB, kCopy));
    void* a = allocator.allocate(8 * MiB, kCompute);
    device.launch_kernel(kCompute);
    allocator.deallocate(a);
    EXPECT_GT(device.live_events(), 0u);
  }
  EXPECT_EQ(device.live_events(), 0u);
  EXPECT_EQ(device.device()->tier_info(Tier::hbm).used_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Devices, StreamOrder, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
