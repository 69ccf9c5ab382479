// The CUDA backend. Spec parsing and the no-GPU answer run everywhere it is built;
// the rest needs a GPU and skips with the reason when there is none (docs/CUDA.md
// has the command to run them on a GPU machine).
#include "device/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::string config_error_of(const std::string& spec) {
  try {
    make_device(spec);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::uint8_t> pattern(std::size_t bytes, std::uint8_t seed) {
  std::vector<std::uint8_t> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::uint8_t>(seed + i * 7);
  return data;
}

void upload(void* device_ptr, const std::vector<std::uint8_t>& data) {
  ASSERT_EQ(cudaMemcpy(device_ptr, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
}

std::vector<std::uint8_t> download(const void* device_ptr, std::size_t bytes) {
  std::vector<std::uint8_t> data(bytes);
  EXPECT_EQ(cudaMemcpy(data.data(), device_ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return data;
}

TEST(CudaSpec, CudaAloneIsDeviceZero) {
  EXPECT_EQ(CudaDevice::parse_ordinal("cuda"), 0);
  EXPECT_EQ(CudaDevice::parse_ordinal("cuda:0"), 0);
  EXPECT_EQ(CudaDevice::parse_ordinal("cuda:7"), 7);
}

TEST(CudaSpec, BadIndicesAreNamed) {
  for (const char* spec : {"cuda:", "cuda:-1", "cuda:x", "cuda:1,2", "cuda:99999999999"}) {
    try {
      CudaDevice::parse_ordinal(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const ConfigError& error) {
      EXPECT_TRUE(contains(error.what(), std::string("'") + spec + "'")) << error.what();
      EXPECT_TRUE(contains(error.what(), "is not a device index")) << error.what();
    }
  }
}

TEST(CudaSpec, WithoutAGpuMakeDeviceSaysSo) {
  std::string why;
  if (CudaDevice::device_count(&why) > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(why.empty());
  const std::string message = config_error_of("cuda:0");
  EXPECT_TRUE(contains(message, "bad device spec 'cuda:0': no CUDA device (")) << message;
  // The runtime says "insufficient driver" where there is none at all: the message says both.
  if (contains(why, "insufficient")) {
    EXPECT_TRUE(contains(message, "no NVIDIA driver is loaded, or it is older")) << message;
  }
}

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CudaDevice::device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    device_ = std::make_unique<CudaDevice>(0);
    granularity_ = device_->tier_info(Tier::hbm).granularity_bytes;
  }

  std::unique_ptr<CudaDevice> device_;
  std::size_t granularity_ = 0;
};

// An event on a stream completes once the stream's work before it has run.
TEST_F(CudaDeviceTest, EventsCompleteAfterTheirStreamsWork) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  void* ptr = nullptr;
  ASSERT_EQ(device_->allocate_segment(Tier::hbm, granularity_, &ptr), DeviceStatus::ok);
  ASSERT_EQ(cudaMemsetAsync(ptr, 1, granularity_, stream), cudaSuccess);
  EventHandle event;
  ASSERT_EQ(device_->record_event(reinterpret_cast<StreamId>(stream), &event), DeviceStatus::ok);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_TRUE(device_->event_completed(event));
  device_->release_event(event);
  device_->free_segment(Tier::hbm, ptr, granularity_);
  cudaStreamDestroy(stream);
}

TEST_F(CudaDeviceTest, HbmIsTheGpuMemoryAndThereIsNoDdr) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const TierInfo hbm = device_->tier_info(Tier::hbm);
  EXPECT_TRUE(hbm.present);
  EXPECT_EQ(hbm.capacity_bytes, total_bytes);
  EXPECT_EQ(hbm.used_bytes, 0U);
  EXPECT_GE(hbm.granularity_bytes, 4 * KiB);
  EXPECT_EQ(hbm.granularity_bytes & (hbm.granularity_bytes - 1), 0U) << "a power of two";
  EXPECT_FALSE(device_->has_tier(Tier::ddr));
  EXPECT_EQ(device_->name(), "cuda:0");
  const int count = CudaDevice::device_count();
  EXPECT_TRUE(contains(config_error_of("cuda:" + std::to_string(count)), "this machine has"));
}

TEST_F(CudaDeviceTest, SegmentsHoldDataAndAreAccounted) {
  const std::size_t bytes = 2 * granularity_;
  void* segment = nullptr;
  ASSERT_EQ(device_->allocate_segment(Tier::hbm, bytes, &segment), DeviceStatus::ok);
  EXPECT_EQ(device_->tier_info(Tier::hbm).used_bytes, bytes);
  const auto data = pattern(bytes, 3);
  upload(segment, data);
  EXPECT_EQ(download(segment, bytes), data);

  void* other = nullptr;
  ASSERT_EQ(device_->allocate_segment(Tier::hbm, granularity_, &other), DeviceStatus::ok);
  device_->copy(other, Tier::hbm, segment, Tier::hbm, granularity_);
  EXPECT_EQ(download(other, granularity_),
            std::vector<std::uint8_t>(data.begin(), data.begin() + granularity_));
  device_->free_segment(Tier::hbm, other, granularity_);
  device_->free_segment(Tier::hbm, segment, bytes);
  EXPECT_EQ(device_->tier_info(Tier::hbm).used_bytes, 0U);
}

TEST_F(CudaDeviceTest, BadSegmentRequestsAreRefused) {
  void* segment = nullptr;
  EXPECT_EQ(device_->allocate_segment(Tier::hbm, 0, &segment), DeviceStatus::invalid_argument);
  EXPECT_EQ(device_->allocate_segment(Tier::hbm, granularity_ + 1, &segment),
            DeviceStatus::invalid_argument);
  EXPECT_EQ(device_->allocate_segment(Tier::ddr, granularity_, &segment),
            DeviceStatus::invalid_argument);
  const std::uint64_t too_much =
      (device_->tier_info(Tier::hbm).capacity_bytes / granularity_ + 1) * granularity_;
  EXPECT_EQ(device_->allocate_segment(Tier::hbm, too_much, &segment), DeviceStatus::out_of_memory);
  void* after = nullptr;
  ASSERT_EQ(device_->allocate_segment(Tier::hbm, granularity_, &after), DeviceStatus::ok)
      << "a refused request leaves no error behind";
  device_->free_segment(Tier::hbm, after, granularity_);
}

TEST_F(CudaDeviceTest, VirtualMemoryRoundTripKeepsDataAcrossRemaps) {
  if (!device_->supports_virtual_memory()) GTEST_SKIP() << "this GPU has no VMM calls";
  void* range = nullptr;
  ASSERT_EQ(device_->reserve_address(2 * granularity_, &range), DeviceStatus::ok);
  PhysicalHandle first;
  PhysicalHandle second;
  ASSERT_EQ(device_->create_physical(Tier::hbm, granularity_, &first), DeviceStatus::ok);
  ASSERT_EQ(device_->create_physical(Tier::hbm, granularity_, &second), DeviceStatus::ok);
  EXPECT_EQ(device_->tier_info(Tier::hbm).used_bytes, 2 * granularity_);
  auto* base = static_cast<std::uint8_t*>(range);
  ASSERT_EQ(device_->map(base, first), DeviceStatus::ok);
  ASSERT_EQ(device_->map(base + granularity_, second), DeviceStatus::ok);

  const auto data = pattern(2 * granularity_, 11);
  upload(base, data);
  EXPECT_EQ(download(base, data.size()), data);

  // Swap the chunks' places: each keeps its bytes.
  device_->unmap(base, 2 * granularity_);
  ASSERT_EQ(device_->map(base, second), DeviceStatus::ok);
  ASSERT_EQ(device_->map(base + granularity_, first), DeviceStatus::ok);
  const auto swapped = download(base, data.size());
  EXPECT_TRUE(std::equal(data.begin() + granularity_, data.end(), swapped.begin()));
  EXPECT_TRUE(
      std::equal(data.begin(), data.begin() + granularity_, swapped.begin() + granularity_));

  device_->unmap(base, 2 * granularity_);
  device_->release_physical(first);
  device_->release_physical(second);
  device_->release_address(range, 2 * granularity_);
  EXPECT_EQ(device_->tier_info(Tier::hbm).used_bytes, 0U);
  EXPECT_EQ(device_->map(base, first), DeviceStatus::invalid_argument) << "released handle";
}

void exercise(Allocator& allocator) {
  std::vector<void*> blocks;
  for (std::size_t bytes : {std::size_t{512}, std::size_t{3} << 20, std::size_t{40} << 20}) {
    void* ptr = allocator.allocate(bytes);
    ASSERT_EQ(cudaMemset(ptr, 0x5A, bytes), cudaSuccess);
    EXPECT_EQ(download(static_cast<std::uint8_t*>(ptr) + bytes - 1, 1)[0], 0x5A);
    blocks.push_back(ptr);
  }
  EXPECT_GT(allocator.stats().reserved_bytes.by_tier[static_cast<int>(Tier::hbm)].current, 0);
  for (void* ptr : blocks) allocator.deallocate(ptr);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
  EXPECT_EQ(allocator.device().tier_info(Tier::hbm).used_bytes, 0U);
}

TEST_F(CudaDeviceTest, CachingAllocatorOnCuda0) {
  Allocator allocator(make_device("cuda:0"));
  exercise(allocator);
  EXPECT_THROW(allocator.allocate(device_->tier_info(Tier::hbm).capacity_bytes * 2), OutOfMemory);
}

TEST_F(CudaDeviceTest, ExpandableAllocatorOnCuda0) {
  if (!device_->supports_virtual_memory()) GTEST_SKIP() << "this GPU has no VMM calls";
  Allocator allocator(make_device("cuda:0"), parse_config("strategy:expandable"));
  exercise(allocator);
}

}  // namespace
}  // namespace npumem
