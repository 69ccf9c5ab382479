// The Ascend backend: one NPU through ACL (libascendcl.so, loaded at run time by
// AclRuntime). HBM is the hbm tier, DDR the ddr tier where aclrtGetMemInfo reports
// it. Segments come from aclrtMalloc; the virtual-memory calls (expandable segments)
// from aclrtReserveMemAddress / aclrtMallocPhysical / aclrtMapMem where CANN has
// them. Every call first makes the NPU current on the calling thread
// (aclrtSetDevice), as ACL's current device is per thread. Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "acl_runtime.h"
#include "acl_spec.h"
#include "npumem/device.h"

namespace npumem {

class AclDevice final : public Device {
 public:
  // Throws ConfigError (naming `spec`) without a usable libascendcl.so, without that
  // NPU, or when ACL refuses to start.
  AclDevice(const AclSpec& acl_spec, const std::string& spec);
  ~AclDevice() override;
  AclDevice(const AclDevice&) = delete;
  AclDevice& operator=(const AclDevice&) = delete;

  std::string name() const override;
  TierInfo tier_info(Tier tier) const override;

  DeviceStatus allocate_segment(Tier tier, std::size_t bytes, void** out) override;
  void free_segment(Tier tier, void* ptr, std::size_t bytes) override;

  bool supports_virtual_memory() const override { return virtual_memory_; }
  DeviceStatus reserve_address(std::size_t bytes, void** out) override;
  void release_address(void* base, std::size_t bytes) override;
  DeviceStatus create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) override;
  void release_physical(PhysicalHandle handle) override;
  DeviceStatus map(void* addr, PhysicalHandle handle) override;
  void unmap(void* addr, std::size_t bytes) override;

  // aclrtMemcpy between any addresses ACL can reach; returns the measured seconds.
  double copy(void* dst, Tier dst_tier, const void* src, Tier src_tier, std::size_t bytes) override;

  // aclrtCreateEvent + aclrtRecordEvent / aclrtQueryEventStatus / aclrtDestroyEvent,
  // where CANN has them; the StreamId is the aclrtStream.
  bool supports_events() const override { return api_.has_events(); }
  DeviceStatus record_event(StreamId stream, EventHandle* out) override;
  bool event_completed(EventHandle event) override;
  void release_event(EventHandle event) override;

  std::string last_error() const override;

 private:
  struct TierState {
    bool present = false;
    std::uint64_t capacity = 0;
    std::uint64_t used = 0;
  };
  struct Allocation {  // a segment or a physical chunk
    Tier tier;
    std::size_t bytes;
  };

  // aclrtSetDevice on this thread; false (and last_error set) when ACL refuses.
  bool make_current();
  // Maps an ACL result to a status, keeping the error text of a failure.
  DeviceStatus status_of(acl::aclError error, const char* call);
  bool valid_size(Tier tier, std::size_t bytes) const;
  // Capacity check and charge of bytes on tier; out_of_memory past the limit.
  DeviceStatus charge(Tier tier, std::size_t bytes);
  void uncharge(Tier tier, std::size_t bytes);
  acl::aclrtPhysicalMemProp physical_prop(Tier tier) const;

  const std::shared_ptr<AclRuntime> runtime_;
  const AclEntryPoints& api_;
  const int ordinal_;
  bool virtual_memory_ = false;
  std::uint64_t granularity_ = acl::kHugePage;

  mutable std::mutex mutex_;
  std::array<TierState, kTierCount> tiers_{};
  std::unordered_map<void*, Allocation> segments_;
  std::unordered_map<std::uint64_t, Allocation> chunks_;  // handle -> chunk
  std::map<std::uintptr_t, std::size_t> mappings_;        // mapped address -> bytes
  std::uint64_t set_device_calls_ = 0;                    // matched by aclrtResetDevice at the end
  std::string last_error_;
};

}  // namespace npumem
