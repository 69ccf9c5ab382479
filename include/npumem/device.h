// The device layer: physical memory providers behind one interface.
//
// A device has tiers (HBM, DDR). It hands out raw segments (cudaMalloc-like) and,
// where it can, virtual-memory calls (reserve a VA range, create a physical chunk,
// map it, unmap it, release it) as CUDA's cuMem* and Ascend's aclrt*Mem* do.
// Calls fail by status, like a driver call; they never throw.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace npumem {

enum class Tier : std::uint8_t { hbm = 0, ddr = 1 };
inline constexpr std::size_t kTierCount = 2;
inline constexpr std::array<Tier, kTierCount> kAllTiers = {Tier::hbm, Tier::ddr};

std::string_view tier_name(Tier tier);

// No device holds more in a tier (64 PiB): the virtual NPU refuses larger capacities,
// and stats pages showing more are not measurements.
inline constexpr std::uint64_t kMaxTierBytes = std::uint64_t{1} << 56;

enum class DeviceStatus : std::uint8_t {
  ok,
  out_of_memory,     // the tier's capacity is spent (or an injected fault)
  not_supported,     // e.g. no virtual-memory calls on this device
  invalid_argument,  // zero size, misaligned address, unknown handle
};

std::string_view status_name(DeviceStatus status);

struct TierInfo {
  Tier tier = Tier::hbm;
  bool present = false;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t used_bytes = 0;  // physical bytes held by segments and chunks
  std::uint64_t bandwidth_bytes_per_s = 0;
  std::uint64_t granularity_bytes = 0;  // sizes of segments and chunks are multiples of it
};

// A stream of the device's work queue as the framework names it (aclrtStream,
// cudaStream_t, as an integer); 0 is the default stream.
using StreamId = std::uint64_t;

// An event recorded on a stream by record_event(); opaque to callers.
struct EventHandle {
  std::uint64_t id = 0;
  explicit operator bool() const { return id != 0; }
};

// A physical chunk created by create_physical(); opaque to callers.
struct PhysicalHandle {
  std::uint64_t id = 0;
  explicit operator bool() const { return id != 0; }
};

class Device {
 public:
  virtual ~Device() = default;

  // "sim:0", "host", "cuda:0", "acl:0".
  virtual std::string name() const = 0;
  virtual TierInfo tier_info(Tier tier) const = 0;
  bool has_tier(Tier tier) const { return tier_info(tier).present; }
  // Cache size reported by the device (L2 on the virtual NPU); not managed.
  virtual std::uint64_t cache_bytes() const { return 0; }

  // Raw segments. bytes must be a multiple of the tier's granularity.
  virtual DeviceStatus allocate_segment(Tier tier, std::size_t bytes, void** out) = 0;
  virtual void free_segment(Tier tier, void* ptr, std::size_t bytes) = 0;

  // Virtual memory. Devices without it answer not_supported.
  virtual bool supports_virtual_memory() const { return false; }
  virtual DeviceStatus reserve_address(std::size_t bytes, void** out);
  virtual void release_address(void* base, std::size_t bytes);
  virtual DeviceStatus create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out);
  virtual void release_physical(PhysicalHandle handle);
  // Maps the whole chunk at addr, which lies inside a reserved range.
  virtual DeviceStatus map(void* addr, PhysicalHandle handle);
  virtual void unmap(void* addr, std::size_t bytes);

  // Bandwidth model: seconds to move bytes from one tier to another.
  virtual double transfer_seconds(Tier from, Tier to, std::size_t bytes) const;
  // Copies bytes between device addresses (when backed) and returns the modelled seconds.
  virtual double copy(void* dst, Tier dst_tier, const void* src, Tier src_tier, std::size_t bytes);

  // Stream events (aclrtRecordEvent, cudaEventRecord): an event recorded on a stream
  // completes once the work queued there before it has run. Devices without them
  // answer not_supported; the allocator then does not order reuse by stream.
  virtual bool supports_events() const { return false; }
  virtual DeviceStatus record_event(StreamId stream, EventHandle* out);
  // Whether the event's work has run (an unknown event counts as done).
  virtual bool event_completed(EventHandle event);
  virtual void release_event(EventHandle event);
  // Waits until the event has completed; the allocator does so before giving up with
  // OutOfMemory while freed blocks wait for events. Default: polls event_completed.
  virtual void wait_event(EventHandle event);

  // What the driver said about the last call that failed (error code and message),
  // for error reports; empty where the device has nothing to add.
  virtual std::string last_error() const { return {}; }
};

// Builds a device from a spec string:
//   sim[:key=value,...]   the virtual NPU (see docs/DEVICES.md for keys)
//   host                  plain host memory, one tier
//   cuda[:N]              a CUDA GPU (only when built with CUDA)
//   acl[:N][,key=value]   an Ascend NPU through libascendcl.so, loaded at run time
// Throws ConfigError naming the bad part.
std::shared_ptr<Device> make_device(std::string_view spec);
// Throws ConfigError where make_device would for the spec as written (an unknown
// device, a bad key or value); makes nothing (a device the spec names may be missing).
void check_device_spec(std::string_view spec);
// Whether a device made from `spec` has memory the host can read and write (`host`, or
// `sim` with backing=host), read as make_device reads it; throws ConfigError as
// check_device_spec does.
bool device_spec_is_host_accessible(std::string_view spec);

}  // namespace npumem
