#include "acl_device.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {

using acl::aclError;

namespace {

int index(Tier tier) {
  return static_cast<int>(tier);
}

[[noreturn]] void reject(const std::string& spec, const std::string& problem) {
  throw ConfigError("bad device spec '" + spec + "': " + problem);
}

// HBM is the high-bandwidth memory, DDR the low; huge pages first (aclrtMemMallocPolicy.md).
acl::aclrtMemMallocPolicy malloc_policy(Tier tier) {
  const unsigned bandwidth =
      tier == Tier::hbm ? acl::ACL_MEM_TYPE_HIGH_BAND_WIDTH : acl::ACL_MEM_TYPE_LOW_BAND_WIDTH;
  return static_cast<acl::aclrtMemMallocPolicy>(acl::ACL_MEM_MALLOC_HUGE_FIRST | bandwidth);
}

DeviceStatus status_for(aclError error) {
  switch (error) {
    case acl::ACL_SUCCESS:
      return DeviceStatus::ok;
    case acl::ACL_ERROR_BAD_ALLOC:
    case acl::ACL_ERROR_RT_MEMORY_ALLOCATION:
    case acl::ACL_ERROR_STORAGE_OVER_LIMIT:
      return DeviceStatus::out_of_memory;
    case acl::ACL_ERROR_API_NOT_SUPPORT:
    case acl::ACL_ERROR_FEATURE_UNSUPPORTED:
    case acl::ACL_ERROR_RT_FEATURE_NOT_SUPPORT:
      return DeviceStatus::not_supported;
    default:
      return DeviceStatus::invalid_argument;
  }
}

void* as_pointer(std::uint64_t id) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
}

}  // namespace

AclDevice::AclDevice(const AclSpec& acl_spec, const std::string& spec)
    : runtime_(AclRuntime::acquire(spec)), api_(runtime_->api()), ordinal_(acl_spec.ordinal) {
  std::uint32_t count = 0;
  if (const aclError error = api_.get_device_count(&count); error != acl::ACL_SUCCESS) {
    reject(spec, "aclrtGetDeviceCount failed: " + runtime_->describe(error));
  }
  if (static_cast<std::uint32_t>(ordinal_) >= count) {
    const std::string reported =
        count == 0   ? std::string("none")
        : count == 1 ? std::string("1 NPU, index 0")
                     : std::to_string(count) + " NPUs, indices 0.." + std::to_string(count - 1);
    reject(spec, "no NPU " + std::to_string(ordinal_) + " (ACL reports " + reported + "; library " +
                     runtime_->library_path() + ")");
  }
  if (!make_current()) reject(spec, last_error_);
  std::size_t free_bytes = 0;
  std::size_t hbm_total = 0;
  if (const aclError error = api_.get_mem_info(acl::ACL_HBM_MEM, &free_bytes, &hbm_total);
      error != acl::ACL_SUCCESS || hbm_total == 0) {
    const std::string why = error != acl::ACL_SUCCESS ? ": " + runtime_->describe(error) : "";
    api_.reset_device(ordinal_);
    reject(spec, "aclrtGetMemInfo(ACL_HBM_MEM) reports no memory" + why);
  }
  std::size_t ddr_free = 0;
  std::size_t ddr_total = 0;
  if (api_.get_mem_info(acl::ACL_DDR_MEM, &ddr_free, &ddr_total) != acl::ACL_SUCCESS) {
    runtime_->discard_error();
    ddr_total = 0;
  }
  tiers_[index(Tier::hbm)] = {
      true,
      acl_spec.hbm_limit == 0 ? hbm_total : std::min<std::uint64_t>(acl_spec.hbm_limit, hbm_total),
      0};
  // A chip without HBM answers the HBM query with its DDR (aclrtGetMemInfo.md): the same
  // figures twice are taken for one memory, not two tiers, unless ddr=SIZE says otherwise.
  const bool ddr_is_separate = ddr_total != 0 && (acl_spec.ddr_limit != 0 ||
                                                  ddr_total != hbm_total || ddr_free != free_bytes);
  if (acl_spec.ddr && ddr_is_separate) {
    tiers_[index(Tier::ddr)] = {true,
                                acl_spec.ddr_limit == 0
                                    ? ddr_total
                                    : std::min<std::uint64_t>(acl_spec.ddr_limit, ddr_total),
                                0};
  }
  if (acl_spec.virtual_memory && api_.has_virtual_memory()) {
    acl::aclrtPhysicalMemProp prop = physical_prop(Tier::hbm);
    std::size_t minimum = 0;
    if (api_.get_granularity(&prop, acl::ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &minimum) ==
            acl::ACL_SUCCESS &&
        minimum != 0 && (minimum & (minimum - 1)) == 0) {
      virtual_memory_ = true;
      granularity_ = std::max<std::uint64_t>(granularity_, minimum);
    } else {
      runtime_->discard_error();
    }
  }
}

// Whatever the allocator did not give back is returned here, mappings first
// (aclrtFreePhysical.md, aclrtReleaseMemAddress.md), and each aclrtSetDevice npumem
// made is matched by an aclrtResetDevice, so a framework's own use of the NPU stays.
AclDevice::~AclDevice() {
  const bool current = api_.set_device(ordinal_) == acl::ACL_SUCCESS;
  for (const auto& [address, bytes] : mappings_) api_.unmap(as_pointer(address));
  for (const auto& [handle, chunk] : chunks_) api_.free_physical(as_pointer(handle));
  for (const auto& [ptr, segment] : segments_) api_.free(ptr);
  const std::uint64_t resets = set_device_calls_ + (current ? 1 : 0);
  for (std::uint64_t i = 0; i < resets; ++i) api_.reset_device(ordinal_);
}

std::string AclDevice::name() const {
  return "acl:" + std::to_string(ordinal_);
}

TierInfo AclDevice::tier_info(Tier tier) const {
  TierInfo info;
  info.tier = tier;
  std::lock_guard lock(mutex_);
  const TierState& state = tiers_[index(tier)];
  if (!state.present) return info;
  info.present = true;
  info.capacity_bytes = state.capacity;
  info.used_bytes = state.used;
  info.granularity_bytes = granularity_;
  return info;
}

bool AclDevice::make_current() {
  const aclError error = api_.set_device(ordinal_);
  std::lock_guard lock(mutex_);
  if (error != acl::ACL_SUCCESS) {
    last_error_ = "aclrtSetDevice(" + std::to_string(ordinal_) + "): " + runtime_->describe(error);
    return false;
  }
  ++set_device_calls_;
  return true;
}

DeviceStatus AclDevice::status_of(aclError error, const char* call) {
  if (error == acl::ACL_SUCCESS) return DeviceStatus::ok;
  std::string text = std::string(call) + ": " + runtime_->describe(error);
  std::lock_guard lock(mutex_);
  last_error_ = std::move(text);
  return status_for(error);
}

std::string AclDevice::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

bool AclDevice::valid_size(Tier tier, std::size_t bytes) const {
  return tiers_[index(tier)].present && bytes != 0 && bytes % granularity_ == 0;
}

DeviceStatus AclDevice::charge(Tier tier, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  TierState& state = tiers_[index(tier)];
  if (state.used + bytes > state.capacity) {
    last_error_ = "the " + std::string(tier_name(tier)) + " limit of " +
                  format_bytes(state.capacity) + " is reached";
    return DeviceStatus::out_of_memory;
  }
  state.used += bytes;
  return DeviceStatus::ok;
}

void AclDevice::uncharge(Tier tier, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  tiers_[index(tier)].used -= bytes;
}

// aclrtMalloc pads a size to 32 bytes and adds 32 (aclrtMalloc.md), then rounds to
// 2 MiB huge pages: asking bytes - 32 makes the driver take exactly `bytes`, a whole
// number of huge pages, instead of one more page than the allocator counted.
DeviceStatus AclDevice::allocate_segment(Tier tier, std::size_t bytes, void** out) {
  if (out == nullptr || !valid_size(tier, bytes)) return DeviceStatus::invalid_argument;
  if (const DeviceStatus admitted = charge(tier, bytes); admitted != DeviceStatus::ok) {
    return admitted;
  }
  void* ptr = nullptr;
  const DeviceStatus status =
      make_current()
          ? status_of(api_.malloc(&ptr, bytes - acl::kMallocPadding, malloc_policy(tier)),
                      "aclrtMalloc")
          : DeviceStatus::invalid_argument;
  if (status != DeviceStatus::ok) {
    uncharge(tier, bytes);
    return status;
  }
  std::lock_guard lock(mutex_);
  segments_.emplace(ptr, Allocation{tier, bytes});
  last_error_.clear();  // a report names the refusal that ended the request, not an old one
  *out = ptr;
  return DeviceStatus::ok;
}

// A pointer this device did not hand out (or a wrong size or tier) is ignored.
void AclDevice::free_segment(Tier tier, void* ptr, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    const auto segment = segments_.find(ptr);
    if (segment == segments_.end() || segment->second.bytes != bytes ||
        segment->second.tier != tier) {
      return;
    }
    segments_.erase(segment);
    tiers_[index(tier)].used -= bytes;
  }
  if (make_current()) status_of(api_.free(ptr), "aclrtFree");
}

DeviceStatus AclDevice::reserve_address(std::size_t bytes, void** out) {
  if (!virtual_memory_) return DeviceStatus::not_supported;
  if (out == nullptr || bytes == 0 || bytes % granularity_ != 0) {
    return DeviceStatus::invalid_argument;
  }
  if (!make_current()) return DeviceStatus::invalid_argument;
  // alignment 0 and flags 0 are the documented values (aclrtReserveMemAddress.md).
  return status_of(api_.reserve_address(out, bytes, 0, nullptr, 0), "aclrtReserveMemAddress");
}

void AclDevice::release_address(void* base, std::size_t /*bytes*/) {
  if (!virtual_memory_ || base == nullptr || !make_current()) return;
  status_of(api_.release_address(base), "aclrtReleaseMemAddress");
}

// HBM chunks are the NPU's 2 MiB huge pages; DDR chunks are the host DDR that ACL
// pins for the NPU (ACL_DDR_MEM_HUGE is host memory only: aclrtMallocPhysical.md).
acl::aclrtPhysicalMemProp AclDevice::physical_prop(Tier tier) const {
  acl::aclrtPhysicalMemProp prop{};
  prop.handleType = acl::ACL_MEM_HANDLE_TYPE_NONE;
  prop.allocationType = acl::ACL_MEM_ALLOCATION_TYPE_PINNED;
  if (tier == Tier::hbm) {
    prop.memAttr = acl::ACL_HBM_MEM_HUGE;
    prop.location = {static_cast<std::uint32_t>(ordinal_), acl::ACL_MEM_LOCATION_TYPE_DEVICE};
  } else {
    prop.memAttr = acl::ACL_DDR_MEM_HUGE;
    prop.location = {0, acl::ACL_MEM_LOCATION_TYPE_HOST};
  }
  return prop;
}

DeviceStatus AclDevice::create_physical(Tier tier, std::size_t bytes, PhysicalHandle* out) {
  if (!virtual_memory_) return DeviceStatus::not_supported;
  if (out == nullptr || !valid_size(tier, bytes)) return DeviceStatus::invalid_argument;
  if (const DeviceStatus admitted = charge(tier, bytes); admitted != DeviceStatus::ok) {
    return admitted;
  }
  const acl::aclrtPhysicalMemProp prop = physical_prop(tier);
  acl::aclrtDrvMemHandle handle = nullptr;
  const DeviceStatus status =
      make_current()
          ? status_of(api_.malloc_physical(&handle, bytes, &prop, 0), "aclrtMallocPhysical")
          : DeviceStatus::invalid_argument;
  if (status != DeviceStatus::ok || handle == nullptr) {
    uncharge(tier, bytes);
    return status == DeviceStatus::ok ? DeviceStatus::invalid_argument : status;
  }
  const auto id = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(handle));
  std::lock_guard lock(mutex_);
  chunks_.emplace(id, Allocation{tier, bytes});
  last_error_.clear();
  *out = PhysicalHandle{id};
  return DeviceStatus::ok;
}

void AclDevice::release_physical(PhysicalHandle handle) {
  if (!virtual_memory_) return;
  {
    std::lock_guard lock(mutex_);
    const auto chunk = chunks_.find(handle.id);
    if (chunk == chunks_.end()) return;
    tiers_[index(chunk->second.tier)].used -= chunk->second.bytes;
    chunks_.erase(chunk);
  }
  if (make_current()) status_of(api_.free_physical(as_pointer(handle.id)), "aclrtFreePhysical");
}

DeviceStatus AclDevice::map(void* addr, PhysicalHandle handle) {
  if (!virtual_memory_) return DeviceStatus::not_supported;
  std::size_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    const auto chunk = chunks_.find(handle.id);
    if (addr == nullptr || chunk == chunks_.end()) return DeviceStatus::invalid_argument;
    bytes = chunk->second.bytes;
  }
  if (!make_current()) return DeviceStatus::invalid_argument;
  // The whole chunk at offset 0, flags 0 (aclrtMapMem.md).
  const DeviceStatus status =
      status_of(api_.map(addr, bytes, 0, as_pointer(handle.id), 0), "aclrtMapMem");
  if (status == DeviceStatus::ok) {
    std::lock_guard lock(mutex_);
    mappings_[reinterpret_cast<std::uintptr_t>(addr)] = bytes;
  }
  return status;
}

// aclrtUnmapMem takes one mapping's address; a range may cover several mappings.
void AclDevice::unmap(void* addr, std::size_t bytes) {
  if (!virtual_memory_ || !make_current()) return;
  const auto start = reinterpret_cast<std::uintptr_t>(addr);
  std::vector<std::uintptr_t> covered;
  {
    std::lock_guard lock(mutex_);
    for (auto it = mappings_.lower_bound(start); it != mappings_.end() && it->first < start + bytes;
         it = mappings_.erase(it)) {
      covered.push_back(it->first);
    }
  }
  for (const std::uintptr_t mapped : covered) {
    status_of(api_.unmap(reinterpret_cast<void*>(mapped)), "aclrtUnmapMem");
  }
}

double AclDevice::copy(void* dst, Tier /*dst_tier*/, const void* src, Tier /*src_tier*/,
                       std::size_t bytes) {
  if (bytes == 0 || dst == nullptr || src == nullptr || !make_current()) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  // The kind is decided by ACL from the addresses (aclrtMemcpy.md); DEFAULT says so.
  status_of(api_.memcpy(dst, bytes, src, bytes, acl::ACL_MEMCPY_DEFAULT), "aclrtMemcpy");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DeviceStatus AclDevice::record_event(StreamId stream, EventHandle* out) {
  if (!api_.has_events()) return DeviceStatus::not_supported;
  if (out == nullptr || !make_current()) return DeviceStatus::invalid_argument;
  acl::aclrtEvent event = nullptr;
  if (const DeviceStatus created = status_of(api_.create_event(&event), "aclrtCreateEvent");
      created != DeviceStatus::ok) {
    return created;
  }
  const DeviceStatus recorded =
      status_of(api_.record_event(
                    event, reinterpret_cast<acl::aclrtStream>(static_cast<std::uintptr_t>(stream))),
                "aclrtRecordEvent");
  if (recorded != DeviceStatus::ok) {
    api_.destroy_event(event);
    return recorded;
  }
  *out = EventHandle{static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(event))};
  return DeviceStatus::ok;
}

// A failed query counts as not complete: holding a block longer is safe, reusing it
// early is not.
bool AclDevice::event_completed(EventHandle event) {
  if (!api_.has_events() || !event) return true;
  acl::aclrtEventRecordedStatus status = acl::ACL_EVENT_RECORDED_STATUS_NOT_READY;
  if (status_of(api_.query_event(as_pointer(event.id), &status), "aclrtQueryEventStatus") !=
      DeviceStatus::ok) {
    return false;
  }
  return status == acl::ACL_EVENT_RECORDED_STATUS_COMPLETE;
}

// aclrtDestroyEvent may come before the event completes (aclrtDestroyEvent.md).
void AclDevice::release_event(EventHandle event) {
  if (!api_.has_events() || !event) return;
  status_of(api_.destroy_event(as_pointer(event.id)), "aclrtDestroyEvent");
}

}  // namespace npumem
