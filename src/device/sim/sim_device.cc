#include "sim_device.h"

#include <algorithm>

#include "device/os/os_memory.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Backing none carves addresses from arenas of this size (address space only).
constexpr std::size_t kArenaBytes = std::size_t{64} << 30;

std::uintptr_t address(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}
std::size_t index(Tier tier) {
  return static_cast<std::size_t>(tier);
}

}  // namespace

SimDevice::SimDevice(SimSpec spec) : spec_(spec), injector_(spec.faults) {
  validate_sim_spec(spec_);
  if (!backed()) address_space_ = std::make_unique<AddressSpace>(spec_.granularity, kArenaBytes);
}

// Gives back whatever the caller still holds (leaked segments, chunks, reservations).
SimDevice::~SimDevice() {
  for (const auto& [ptr, segment] : segments_) {
    give_back(reinterpret_cast<void*>(ptr), segment.bytes);
  }
  for (const auto& [id, chunk] : chunks_) {
    if (chunk.fd >= 0) os::close_shared(chunk.fd);
  }
  for (const auto& [base, bytes] : mappings_.reservations()) {
    give_back(reinterpret_cast<void*>(base), bytes);
  }
}

std::string SimDevice::name() const {
  return "sim:" + std::to_string(spec_.id);
}

TierInfo SimDevice::tier_info(Tier tier) const {
  TierInfo info;
  info.tier = tier;
  if (index(tier) >= kTierCount) return info;  // not a tier: reported absent
  info.capacity_bytes = spec_.capacity(tier);
  info.present = info.capacity_bytes != 0;
  info.bandwidth_bytes_per_s = spec_.bandwidth(tier);
  info.granularity_bytes = spec_.granularity;
  const std::lock_guard lock(mutex_);
  info.used_bytes = used_[index(tier)];
  return info;
}

DeviceStatus SimDevice::allocate_segment(Tier tier, std::size_t bytes, void** out) {
  const std::lock_guard lock(mutex_);
  ++counts_.segment_allocs;
  if (out == nullptr || !valid_tier_size(tier, bytes)) return invalid();
  if (const DeviceStatus status = admit(tier, bytes, FaultOp::segment);
      status != DeviceStatus::ok) {
    return status;
  }
  void* ptr = obtain_segment_memory(bytes);
  if (ptr == nullptr) {
    ++counts_.system_failures;
    return DeviceStatus::out_of_memory;
  }
  used_[index(tier)] += bytes;
  segments_.emplace(address(ptr), Segment{tier, bytes});
  *out = ptr;
  return DeviceStatus::ok;
}

// A pointer, tier or size that does not match a live segment is ignored (and counted):
// a bad free must not take the device down.
void SimDevice::free_segment(Tier tier, void* ptr, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  ++counts_.segment_frees;
  const auto segment = segments_.find(address(ptr));
  if (segment == segments_.end() || segment->second.tier != tier ||
      segment->second.bytes != bytes) {
    invalid();
    return;
  }
  segments_.erase(segment);
  used_[index(tier)] -= bytes;
  give_back(ptr, bytes);
}

DeviceStatus SimDevice::reserve_address(std::size_t bytes, void** out) {
  const std::lock_guard lock(mutex_);
  ++counts_.reserves;
  if (!spec_.virtual_memory) return DeviceStatus::not_supported;
  if (out == nullptr || !valid_size(bytes)) return invalid();
  void* base = obtain_address_range(bytes);
  if (base == nullptr) {
    ++counts_.system_failures;
    return DeviceStatus::out_of_memory;
  }
  mappings_.add_reservation(address(base), bytes);
  *out = base;
  return DeviceStatus::ok;
}

// Releasing a range also unmaps whatever is still mapped in it.
void SimDevice::release_address(void* base, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  ++counts_.address_releases;
  if (!spec_.virtual_memory || !mappings_.remove_reservation(address(base), bytes)) {
    invalid();
    return;
  }
  give_back(base, bytes);
}

DeviceStatus SimDevice::create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) {
  const std::lock_guard lock(mutex_);
  ++counts_.creates;
  if (!spec_.virtual_memory) return DeviceStatus::not_supported;
  if (out == nullptr || !valid_tier_size(tier, bytes)) return invalid();
  if (const DeviceStatus status = admit(tier, bytes, FaultOp::create); status != DeviceStatus::ok) {
    return status;
  }
  const int fd = backed() ? os::create_shared(bytes) : -1;
  if (backed() && fd < 0) {
    ++counts_.system_failures;
    return DeviceStatus::out_of_memory;
  }
  const std::uint64_t id = next_chunk_id_++;
  chunks_.emplace(id, Chunk{tier, bytes, fd});
  used_[index(tier)] += bytes;
  out->id = id;
  return DeviceStatus::ok;
}

// The capacity comes back at once; pages still mapped somewhere stay until unmapped.
void SimDevice::release_physical(PhysicalHandle handle) {
  const std::lock_guard lock(mutex_);
  ++counts_.releases;
  const auto chunk = chunks_.find(handle.id);
  if (!spec_.virtual_memory || chunk == chunks_.end()) {
    invalid();
    return;
  }
  if (chunk->second.fd >= 0) os::close_shared(chunk->second.fd);
  used_[index(chunk->second.tier)] -= chunk->second.bytes;
  chunks_.erase(chunk);
}

DeviceStatus SimDevice::map(void* addr, PhysicalHandle handle) {
  const std::lock_guard lock(mutex_);
  ++counts_.maps;
  if (!spec_.virtual_memory) return DeviceStatus::not_supported;
  const auto found = chunks_.find(handle.id);
  if (found == chunks_.end() || !aligned(addr)) return invalid();
  const Chunk& chunk = found->second;
  if (!mappings_.can_map(address(addr), chunk.bytes)) return invalid();
  if (injector_.should_fail(FaultOp::map)) return injected_failure("a mapping");
  if (backed() && !os::map_shared_fixed(addr, chunk.bytes, chunk.fd)) {
    ++counts_.system_failures;
    return DeviceStatus::out_of_memory;
  }
  mappings_.add_mapping(address(addr), chunk.bytes, handle.id);
  return DeviceStatus::ok;
}

// The range must cover whole mappings; unmapped granules inside it are fine.
void SimDevice::unmap(void* addr, std::size_t bytes) {
  const std::lock_guard lock(mutex_);
  ++counts_.unmaps;
  if (!spec_.virtual_memory || !aligned(addr) || !valid_size(bytes) ||
      !mappings_.remove_mappings(address(addr), bytes)) {
    invalid();
    return;
  }
  if (backed() && !os::rereserve(addr, bytes)) ++counts_.system_failures;
}

double SimDevice::copy(void* dst, Tier dst_tier, const void* src, Tier src_tier,
                       std::size_t bytes) {
  if (backed()) return Device::copy(dst, dst_tier, src, src_tier, bytes);
  return transfer_seconds(src_tier, dst_tier, bytes);
}

DeviceCallCounts SimDevice::call_counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

void SimDevice::set_faults(const FaultSpec& faults) {
  const std::lock_guard lock(mutex_);
  injector_ = FaultInjector(faults);
}

bool SimDevice::valid_size(std::size_t bytes) const {
  return bytes != 0 && bytes % spec_.granularity == 0;
}

bool SimDevice::valid_tier_size(Tier tier, std::size_t bytes) const {
  return index(tier) < kTierCount && spec_.capacity(tier) != 0 && valid_size(bytes);
}

bool SimDevice::aligned(const void* addr) const {
  return addr != nullptr && address(addr) % spec_.granularity == 0;
}

DeviceStatus SimDevice::admit(Tier tier, std::size_t bytes, FaultOp op) {
  if (injector_.should_fail(op)) {
    return injected_failure(format_bytes(bytes) + " of " + std::string(tier_name(tier)));
  }
  if (bytes > spec_.capacity(tier) - used_[index(tier)]) {
    ++counts_.capacity_failures;
    last_error_ = std::string(tier_name(tier)) + " is full: " + format_bytes(used_[index(tier)]) +
                  " of " + format_bytes(spec_.capacity(tier)) + " in use, " + format_bytes(bytes) +
                  " asked";
    return DeviceStatus::out_of_memory;
  }
  last_error_.clear();
  return DeviceStatus::ok;
}

DeviceStatus SimDevice::injected_failure(const std::string& refused) {
  ++counts_.injected_failures;
  last_error_ = "a fault injected by the device spec (fail_every / fail_prob) refused " + refused;
  return DeviceStatus::out_of_memory;
}

std::string SimDevice::last_error() const {
  const std::lock_guard lock(mutex_);
  return last_error_;
}

DeviceStatus SimDevice::invalid() {
  ++counts_.invalid_calls;
  return DeviceStatus::invalid_argument;
}

void* SimDevice::obtain_segment_memory(std::size_t bytes) {
  return backed() ? os::map_anonymous(bytes) : address_space_->take(bytes);
}

void SimDevice::give_back(void* ptr, std::size_t bytes) {
  if (backed()) {
    os::release(ptr, bytes);
  } else {
    address_space_->give_back(ptr, bytes);
  }
}

void* SimDevice::obtain_address_range(std::size_t bytes) {
  return backed() ? os::reserve(bytes, spec_.granularity) : address_space_->take(bytes);
}

DeviceStatus SimDevice::record_event(StreamId stream, EventHandle* out) {
  if (out == nullptr) return DeviceStatus::invalid_argument;
  const std::lock_guard lock(mutex_);
  const std::uint64_t id = next_event_id_++;
  events_.emplace(id, Event{stream, streams_[stream].launched});
  *out = EventHandle{id};
  return DeviceStatus::ok;
}

bool SimDevice::event_completed(EventHandle event) {
  const std::lock_guard lock(mutex_);
  const auto found = events_.find(event.id);
  if (found == events_.end()) return true;
  return streams_[found->second.stream].finished >= found->second.waits_for;
}

void SimDevice::release_event(EventHandle event) {
  const std::lock_guard lock(mutex_);
  events_.erase(event.id);
}

void SimDevice::wait_event(EventHandle event) {
  const std::lock_guard lock(mutex_);
  const auto found = events_.find(event.id);
  if (found == events_.end()) return;
  StreamWork& work = streams_[found->second.stream];
  work.finished = std::max(work.finished, found->second.waits_for);
}

void SimDevice::launch_kernel(StreamId stream) {
  const std::lock_guard lock(mutex_);
  ++streams_[stream].launched;
}

void SimDevice::finish_kernel(StreamId stream) {
  const std::lock_guard lock(mutex_);
  StreamWork& work = streams_[stream];
  if (work.finished < work.launched) ++work.finished;
}

std::size_t SimDevice::live_events() const {
  const std::lock_guard lock(mutex_);
  return events_.size();
}

}  // namespace npumem
