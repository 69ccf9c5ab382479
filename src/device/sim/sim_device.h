// The virtual NPU: HBM and DDR tiers with capacities, bandwidths and a granularity,
// backed by host memory or by page-less addresses (backing none), with optional
// virtual-memory calls and fault injection. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "address_space.h"
#include "fault_injector.h"
#include "mapping_table.h"
#include "npumem/device.h"
#include "sim_spec.h"

namespace npumem {

// How often each device call was made (every attempt, failed or not), and how
// calls ended badly. Tests and benchmarks read it, e.g. "no device call after init".
struct DeviceCallCounts {
  std::uint64_t segment_allocs = 0;
  std::uint64_t segment_frees = 0;
  std::uint64_t reserves = 0;
  std::uint64_t address_releases = 0;
  std::uint64_t creates = 0;
  std::uint64_t releases = 0;
  std::uint64_t maps = 0;
  std::uint64_t unmaps = 0;
  std::uint64_t injected_failures = 0;  // out_of_memory answers from the fault injector
  std::uint64_t capacity_failures = 0;  // out_of_memory answers from a full tier
  std::uint64_t system_failures = 0;    // out_of_memory answers because the OS refused
  std::uint64_t invalid_calls = 0;      // invalid_argument answers and ignored bad calls

  // Every memory call: allocs, frees, reserves, releases, creates, maps, unmaps.
  std::uint64_t total() const {
    return segment_allocs + segment_frees + reserves + address_releases + creates + releases +
           maps + unmaps;
  }
};

class SimDevice : public Device {
 public:
  explicit SimDevice(SimSpec spec = {});
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  std::string name() const override;
  TierInfo tier_info(Tier tier) const override;
  std::uint64_t cache_bytes() const override { return spec_.cache_bytes; }

  DeviceStatus allocate_segment(Tier tier, std::size_t bytes, void** out) override;
  void free_segment(Tier tier, void* ptr, std::size_t bytes) override;

  // Why the last memory call was refused (an injected fault, a full tier); "" after a
  // success: an out-of-memory report names it rather than guessing at fragmentation.
  std::string last_error() const override;

  bool supports_virtual_memory() const override { return spec_.virtual_memory; }
  DeviceStatus reserve_address(std::size_t bytes, void** out) override;
  void release_address(void* base, std::size_t bytes) override;
  DeviceStatus create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) override;
  void release_physical(PhysicalHandle handle) override;
  DeviceStatus map(void* addr, PhysicalHandle handle) override;
  void unmap(void* addr, std::size_t bytes) override;

  double copy(void* dst, Tier dst_tier, const void* src, Tier src_tier, std::size_t bytes) override;

  // Simulated streams: work queued with launch_kernel runs until finish_kernel (in
  // order per stream), so a test can keep a kernel "running" while the allocator
  // decides about reuse. An event completes once the work queued before it finished.
  bool supports_events() const override { return true; }
  DeviceStatus record_event(StreamId stream, EventHandle* out) override;
  bool event_completed(EventHandle event) override;
  void release_event(EventHandle event) override;
  // Simulated time passes: the stream's work queued before the event finishes.
  void wait_event(EventHandle event) override;
  void launch_kernel(StreamId stream);
  // Finishes the oldest running kernel of the stream (none running: nothing happens).
  void finish_kernel(StreamId stream);
  std::size_t live_events() const;

  const SimSpec& spec() const { return spec_; }
  DeviceCallCounts call_counts() const;
  // Replaces the fault plan (and restarts its count and random sequence), e.g. to
  // start failing only after a test has set up its state.
  void set_faults(const FaultSpec& faults);

 private:
  struct Segment {
    Tier tier;
    std::size_t bytes;
  };
  struct Chunk {
    Tier tier;
    std::size_t bytes;
    int fd;  // -1 without backing
  };

  bool valid_size(std::size_t bytes) const;
  bool valid_tier_size(Tier tier, std::size_t bytes) const;
  bool aligned(const void* addr) const;
  // Injected fault or full tier: out_of_memory (counted); ok otherwise. Needs mutex_.
  DeviceStatus admit(Tier tier, std::size_t bytes, FaultOp op);
  // An injected fault refused `refused` ("2.00 MiB of hbm"): counted, named as the last
  // error, out_of_memory. Needs mutex_.
  DeviceStatus injected_failure(const std::string& refused);
  DeviceStatus invalid();  // counts and answers invalid_argument; needs mutex_
  void* obtain_segment_memory(std::size_t bytes);
  void* obtain_address_range(std::size_t bytes);
  // Returns a segment or a reserved range to where it came from.
  void give_back(void* ptr, std::size_t bytes);
  bool backed() const { return spec_.backing == Backing::host; }

  const SimSpec spec_;
  mutable std::mutex mutex_;
  std::array<std::uint64_t, kTierCount> used_{};
  std::map<std::uintptr_t, Segment> segments_;
  std::unordered_map<std::uint64_t, Chunk> chunks_;
  std::uint64_t next_chunk_id_ = 1;
  MappingTable mappings_;
  std::unique_ptr<AddressSpace> address_space_;  // backing none only
  FaultInjector injector_;
  DeviceCallCounts counts_;
  std::string last_error_;  // needs mutex_
  struct StreamWork {
    std::uint64_t launched = 0;
    std::uint64_t finished = 0;
  };
  struct Event {
    StreamId stream;
    std::uint64_t waits_for;  // the stream's launched count when recorded
  };
  std::unordered_map<StreamId, StreamWork> streams_;
  std::unordered_map<std::uint64_t, Event> events_;
  std::uint64_t next_event_id_ = 1;
};

}  // namespace npumem
