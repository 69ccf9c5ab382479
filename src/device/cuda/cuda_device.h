// The CUDA backend: one GPU whose device memory is the hbm tier (there is no ddr
// tier). Segments come from cudaMalloc; the virtual-memory calls (expandable segments)
// from the driver's cuMem* calls, which are resolved at run time through the runtime,
// so a binary built with CUDA still starts on a machine without a driver or GPU.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "npumem/device.h"

namespace npumem {

class CudaDevice final : public Device {
 public:
  // Throws ConfigError when this process sees no CUDA device with that index.
  explicit CudaDevice(int ordinal);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // "cuda" is device 0, "cuda:N" device N. Throws ConfigError naming the spec otherwise.
  static int parse_ordinal(std::string_view spec);
  // The CUDA devices this process sees; 0 without a driver or GPU, and then why_none
  // (when given) says why.
  static int device_count(std::string* why_none = nullptr);

  std::string name() const override;
  TierInfo tier_info(Tier tier) const override;
  std::uint64_t cache_bytes() const override { return l2_bytes_; }

  DeviceStatus allocate_segment(Tier tier, std::size_t bytes, void** out) override;
  void free_segment(Tier tier, void* ptr, std::size_t bytes) override;

  bool supports_virtual_memory() const override { return driver_ != nullptr; }
  DeviceStatus reserve_address(std::size_t bytes, void** out) override;
  void release_address(void* base, std::size_t bytes) override;
  DeviceStatus create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) override;
  void release_physical(PhysicalHandle handle) override;
  DeviceStatus map(void* addr, PhysicalHandle handle) override;
  void unmap(void* addr, std::size_t bytes) override;

  // cudaEventCreateWithFlags (no timing) + cudaEventRecord / cudaEventQuery /
  // cudaEventDestroy; the StreamId is the cudaStream_t.
  bool supports_events() const override { return true; }
  DeviceStatus record_event(StreamId stream, EventHandle* out) override;
  bool event_completed(EventHandle event) override;
  void release_event(EventHandle event) override;

  // cudaMemcpy between any addresses the GPU can reach; returns the measured seconds.
  double copy(void* dst, Tier dst_tier, const void* src, Tier src_tier, std::size_t bytes) override;

  struct Driver;  // the cuMem* entry points (defined in cuda_device.cc)

 private:
  bool valid_size(Tier tier, std::size_t bytes) const;
  void account(std::int64_t bytes);

  const int ordinal_;
  std::uint64_t capacity_bytes_ = 0;
  std::uint64_t granularity_bytes_ = 0;
  std::uint64_t bandwidth_bytes_per_s_ = 0;
  std::uint64_t l2_bytes_ = 0;
  std::unique_ptr<const Driver> driver_;  // null where the GPU has no virtual memory calls

  mutable std::mutex mutex_;
  std::uint64_t used_bytes_ = 0;
  std::unordered_map<void*, std::size_t> segments_;
  std::unordered_map<std::uint64_t, std::size_t> chunks_;  // physical handle -> bytes
};

}  // namespace npumem
