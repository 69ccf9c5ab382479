// A test double of libascendcl.so: the ACL entry points npumem resolves
// (src/device/acl/acl_api.h, CANN's documented signatures) on host memory, so the
// Ascend backend and the whole allocator suite run where no NPU and no CANN exist.
// It keeps one NPU, a virtual NPU (SimDevice, backing host) behind the calls: its
// capacities are what aclrtGetMemInfo reports, its fault injector fails calls, and
// its call counts show what npumem asked. Built twice: with the virtual-memory group
// and, with NPUMEM_ACL_DOUBLE_NO_VMM, without it (an older CANN / HDK).
//
// The NPU is configured by a virtual NPU spec ("hbm=256MiB,ddr=0,fail_every=3", keys
// as in docs/DEVICES.md) from NPUMEM_ACL_DOUBLE or npumem_acl_double_configure(), read
// at each aclInit that starts ACL. With NPUMEM_ACL_DOUBLE_LOG set, aclFinalize appends
// one line to that file: what npumem called and what it still held, for CLI tests.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "device/acl/acl_api.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"
#include "npumem/errors.h"

using namespace npumem::acl;
using npumem::DeviceStatus;
using npumem::PhysicalHandle;
using npumem::Tier;

namespace {

struct Allocation {
  Tier tier;
  std::size_t bytes;
};

struct Npu {
  std::mutex mutex;
  std::string configuration;  // the spec the next aclInit starts the NPU with
  std::unique_ptr<npumem::SimDevice> device;
  std::map<void*, Allocation> segments;
  std::map<void*, std::size_t> reservations;
  std::map<void*, std::size_t> mappings;
  std::int64_t device_refs = 0;  // aclrtSetDevice calls not yet matched by aclrtResetDevice
  // aclrtEvent -> the virtual NPU's event once recorded (0: created, not recorded).
  std::map<std::uintptr_t, std::uint64_t> events;
  std::uintptr_t next_event = 1;
};

Npu& npu() {
  static Npu instance;
  return instance;
}

// What ACL keeps per thread. In a map, not thread_local: the double is dlopen'd, and
// LeakSanitizer (GCC 12, glibc 2.36) misreads such a library's dynamic TLS and dies at
// exit, depending on the test binary's layout.
struct ThreadState {
  int current_device = -1;
  std::string recent_error;
  std::string returned_error;
};

ThreadState& this_thread() {
  static std::mutex mutex;
  static std::map<std::thread::id, ThreadState> states;
  std::lock_guard lock(mutex);
  return states[std::this_thread::get_id()];  // map nodes do not move
}

aclError fail(aclError error, const std::string& message) {
  std::string& recent = this_thread().recent_error;
  recent = message + (recent.empty() ? "" : "\n" + recent);
  return error;
}

// The calls that act on "the current device" need one set on this thread, as ACL does.
aclError check_ready(const char* call) {
  if (!npu().device)
    return fail(ACL_ERROR_UNINITIALIZE, std::string(call) + ": aclInit not called");
  if (this_thread().current_device != 0) {
    return fail(ACL_ERROR_RT_CONTEXT_NULL,
                std::string(call) + ": no current device on this thread (call aclrtSetDevice)");
  }
  return ACL_SUCCESS;
}

std::size_t round_up(std::size_t bytes, std::size_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

Tier tier_of_attr(aclrtMemAttr attr) {
  switch (attr) {
    case ACL_DDR_MEM:
    case ACL_DDR_MEM_HUGE:
    case ACL_DDR_MEM_NORMAL:
    case ACL_DDR_MEM_P2P_HUGE:
    case ACL_DDR_MEM_P2P_NORMAL:
      return Tier::ddr;
    default:
      return Tier::hbm;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) aclError aclInit(const char* /*configPath*/) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (n.device) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialised");
  std::string text = n.configuration;
  if (text.empty()) {
    const char* env = std::getenv("NPUMEM_ACL_DOUBLE");
    text = env != nullptr ? env : "";
  }
  try {
    npumem::SimSpec spec = npumem::parse_sim_spec(text.empty() ? "sim" : "sim:" + text);
    spec.backing = npumem::Backing::host;
    n.device = std::make_unique<npumem::SimDevice>(spec);
  } catch (const npumem::Error& error) {
    return fail(ACL_ERROR_INVALID_PARAM, std::string("aclInit: ") + error.what());
  }
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclFinalize() {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (!n.device) return fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: not initialised");
  if (const char* log = std::getenv("NPUMEM_ACL_DOUBLE_LOG"); log != nullptr && *log != '\0') {
    if (std::FILE* file = std::fopen(log, "a"); file != nullptr) {
      const npumem::DeviceCallCounts calls = n.device->call_counts();
      const std::uint64_t held =
          n.device->tier_info(Tier::hbm).used_bytes + n.device->tier_info(Tier::ddr).used_bytes;
      std::fprintf(file,
                   "aclFinalize held_bytes=%llu segments=%zu reservations=%zu mappings=%zu "
                   "mallocs=%llu frees=%llu creates=%llu releases=%llu maps=%llu unmaps=%llu "
                   "set_device_refs=%lld\n",
                   static_cast<unsigned long long>(held), n.segments.size(), n.reservations.size(),
                   n.mappings.size(), static_cast<unsigned long long>(calls.segment_allocs),
                   static_cast<unsigned long long>(calls.segment_frees),
                   static_cast<unsigned long long>(calls.creates),
                   static_cast<unsigned long long>(calls.releases),
                   static_cast<unsigned long long>(calls.maps),
                   static_cast<unsigned long long>(calls.unmaps),
                   static_cast<long long>(n.device_refs));
      std::fclose(file);
    }
  }
  n.device.reset();  // every segment, chunk and reservation goes with the NPU
  n.segments.clear();
  n.reservations.clear();
  n.mappings.clear();
  n.events.clear();
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) const char* aclGetRecentErrMsg() {
  ThreadState& state = this_thread();
  if (state.recent_error.empty()) return nullptr;
  state.returned_error = std::move(state.recent_error);
  state.recent_error.clear();
  return state.returned_error.c_str();
}

__attribute__((visibility("default"))) aclError aclrtGetDeviceCount(std::uint32_t* count) {
  if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: null count");
  *count = 1;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtSetDevice(std::int32_t deviceId) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (!n.device) return fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice: aclInit not called");
  if (deviceId != 0) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID,
                "aclrtSetDevice: no device " + std::to_string(deviceId));
  }
  this_thread().current_device = deviceId;
  ++n.device_refs;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtResetDevice(std::int32_t deviceId) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (deviceId != 0 || n.device_refs == 0) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: device not set");
  }
  --n.device_refs;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtGetMemInfo(aclrtMemAttr attr,
                                                                std::size_t* free,
                                                                std::size_t* total) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtGetMemInfo"); error != ACL_SUCCESS) return error;
  if (free == nullptr || total == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: null output");
  }
  const npumem::TierInfo info = n.device->tier_info(tier_of_attr(attr));
  *total = info.present ? info.capacity_bytes : 0;
  *free = info.present ? info.capacity_bytes - info.used_bytes : 0;
  return ACL_SUCCESS;
}

// The driver's padding and rounding (aclrtMalloc.md), then the NPU's granularity.
__attribute__((visibility("default"))) aclError aclrtMalloc(void** devPtr, std::size_t size,
                                                            aclrtMemMallocPolicy policy) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtMalloc"); error != ACL_SUCCESS) return error;
  if (devPtr == nullptr || size == 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: null pointer or size 0");
  }
  const Tier tier =
      (static_cast<unsigned>(policy) & ACL_MEM_TYPE_LOW_BAND_WIDTH) != 0 ? Tier::ddr : Tier::hbm;
  const std::size_t cost = round_up(malloc_cost(size), n.device->spec().granularity);
  void* ptr = nullptr;
  if (const DeviceStatus status = n.device->allocate_segment(tier, cost, &ptr);
      status != DeviceStatus::ok) {
    return fail(status == DeviceStatus::out_of_memory ? ACL_ERROR_RT_MEMORY_ALLOCATION
                                                      : ACL_ERROR_INVALID_PARAM,
                "aclrtMalloc: cannot allocate " + std::to_string(size) + " bytes (" +
                    std::to_string(cost) + " with padding) on " +
                    std::string(npumem::tier_name(tier)));
  }
  n.segments[ptr] = {tier, cost};
  *devPtr = ptr;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtFree(void* devPtr) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtFree"); error != ACL_SUCCESS) return error;
  const auto segment = n.segments.find(devPtr);
  if (segment == n.segments.end()) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: not an aclrtMalloc pointer");
  }
  n.device->free_segment(segment->second.tier, devPtr, segment->second.bytes);
  n.segments.erase(segment);
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtMemcpy(void* dst, std::size_t destMax,
                                                            const void* src, std::size_t count,
                                                            aclrtMemcpyKind /*kind*/) {
  if (dst == nullptr || src == nullptr || count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: null pointer or count above destMax");
  }
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

// Events over the virtual NPU's simulated streams (npumem_acl_double_launch_kernel).
__attribute__((visibility("default"))) aclError aclrtCreateEvent(aclrtEvent* event) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtCreateEvent"); error != ACL_SUCCESS) return error;
  if (event == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: null event");
  const std::uintptr_t id = n.next_event++;
  n.events[id] = 0;
  *event = reinterpret_cast<aclrtEvent>(id);
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtRecordEvent(aclrtEvent event,
                                                                 aclrtStream stream) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtRecordEvent"); error != ACL_SUCCESS) return error;
  const auto found = n.events.find(reinterpret_cast<std::uintptr_t>(event));
  if (found == n.events.end()) return fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: no event");
  npumem::EventHandle recorded;
  n.device->record_event(reinterpret_cast<std::uintptr_t>(stream), &recorded);
  n.device->release_event(npumem::EventHandle{found->second});
  found->second = recorded.id;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtQueryEventStatus(
    aclrtEvent event, aclrtEventRecordedStatus* status) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtQueryEventStatus"); error != ACL_SUCCESS) {
    return error;
  }
  const auto found = n.events.find(reinterpret_cast<std::uintptr_t>(event));
  if (found == n.events.end() || status == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus: no event");
  }
  *status = found->second != 0 && n.device->event_completed(npumem::EventHandle{found->second})
                ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtDestroyEvent(aclrtEvent event) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtDestroyEvent"); error != ACL_SUCCESS) return error;
  const auto found = n.events.find(reinterpret_cast<std::uintptr_t>(event));
  if (found == n.events.end()) return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: no event");
  n.device->release_event(npumem::EventHandle{found->second});
  n.events.erase(found);
  return ACL_SUCCESS;
}

#ifndef NPUMEM_ACL_DOUBLE_NO_VMM

namespace {

aclError from_status(DeviceStatus status, const char* call) {
  switch (status) {
    case DeviceStatus::ok:
      return ACL_SUCCESS;
    case DeviceStatus::out_of_memory:
      return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, std::string(call) + ": out of device memory");
    case DeviceStatus::not_supported:
      return fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, std::string(call) + ": not supported");
    case DeviceStatus::invalid_argument:
      break;
  }
  return fail(ACL_ERROR_RT_PARAM_INVALID, std::string(call) + ": invalid argument");
}

}  // namespace

__attribute__((visibility("default"))) aclError aclrtMemGetAllocationGranularity(
    aclrtPhysicalMemProp* prop, aclrtMemGranularityOptions /*option*/, std::size_t* granularity) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtMemGetAllocationGranularity");
      error != ACL_SUCCESS) {
    return error;
  }
  if (prop == nullptr || granularity == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemGetAllocationGranularity: null argument");
  }
  if (!n.device->supports_virtual_memory()) {
    return from_status(DeviceStatus::not_supported, "aclrtMemGetAllocationGranularity");
  }
  *granularity = n.device->spec().granularity;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtReserveMemAddress(
    void** virPtr, std::size_t size, std::size_t alignment, void* expectPtr, std::uint64_t flags) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtReserveMemAddress"); error != ACL_SUCCESS) {
    return error;
  }
  // alignment must be 0; flags 0 is the advised value (aclrtReserveMemAddress.md).
  if (virPtr == nullptr || alignment != 0 || expectPtr != nullptr || flags != 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtReserveMemAddress: bad argument");
  }
  void* base = nullptr;
  if (const aclError error =
          from_status(n.device->reserve_address(size, &base), "aclrtReserveMemAddress");
      error != ACL_SUCCESS) {
    return error;
  }
  n.reservations[base] = size;
  *virPtr = base;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtReleaseMemAddress(void* virPtr) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtReleaseMemAddress"); error != ACL_SUCCESS) {
    return error;
  }
  const auto found = n.reservations.find(virPtr);
  if (found == n.reservations.end()) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtReleaseMemAddress: not a reservation");
  }
  n.device->release_address(virPtr, found->second);
  n.reservations.erase(found);
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtMallocPhysical(
    aclrtDrvMemHandle* handle, std::size_t size, const aclrtPhysicalMemProp* prop,
    std::uint64_t flags) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtMallocPhysical"); error != ACL_SUCCESS) {
    return error;
  }
  if (handle == nullptr || prop == nullptr || flags != 0 ||
      prop->handleType != ACL_MEM_HANDLE_TYPE_NONE ||
      prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocPhysical: bad argument");
  }
  PhysicalHandle chunk;
  if (const aclError error =
          from_status(n.device->create_physical(tier_of_attr(prop->memAttr), size, &chunk),
                      "aclrtMallocPhysical");
      error != ACL_SUCCESS) {
    return error;
  }
  *handle = reinterpret_cast<aclrtDrvMemHandle>(static_cast<std::uintptr_t>(chunk.id));
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtFreePhysical"); error != ACL_SUCCESS) return error;
  n.device->release_physical(PhysicalHandle{reinterpret_cast<std::uintptr_t>(handle)});
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtMapMem(void* virPtr, std::size_t size,
                                                            std::size_t offset,
                                                            aclrtDrvMemHandle handle,
                                                            std::uint64_t flags) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtMapMem"); error != ACL_SUCCESS) return error;
  if (offset != 0 || flags != 0) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMapMem: offset and flags must be 0");
  }
  if (const aclError error = from_status(
          n.device->map(virPtr, PhysicalHandle{reinterpret_cast<std::uintptr_t>(handle)}),
          "aclrtMapMem");
      error != ACL_SUCCESS) {
    return error;
  }
  n.mappings[virPtr] = size;
  return ACL_SUCCESS;
}

__attribute__((visibility("default"))) aclError aclrtUnmapMem(void* virPtr) {
  Npu& n = npu();
  std::lock_guard lock(n.mutex);
  if (const aclError error = check_ready("aclrtUnmapMem"); error != ACL_SUCCESS) return error;
  const auto found = n.mappings.find(virPtr);
  if (found == n.mappings.end()) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtUnmapMem: not a mapped address");
  }
  n.device->unmap(virPtr, found->second);
  n.mappings.erase(found);
  return ACL_SUCCESS;
}

#endif  // NPUMEM_ACL_DOUBLE_NO_VMM

// Test controls, not part of ACL.

// The NPU the next aclInit starts (a virtual NPU spec without "sim:"); "" = NPUMEM_ACL_DOUBLE.
__attribute__((visibility("default"))) void npumem_acl_double_configure(const char* spec) {
  std::lock_guard lock(npu().mutex);
  npu().configuration = spec != nullptr ? spec : "";
}

// Replaces the fault plan of the running NPU; false when ACL is not initialised.
__attribute__((visibility("default"))) bool npumem_acl_double_set_faults(
    const npumem::FaultSpec* faults) {
  std::lock_guard lock(npu().mutex);
  if (!npu().device || faults == nullptr) return false;
  npu().device->set_faults(*faults);
  return true;
}

// The running NPU's call counts; false when ACL is not initialised.
__attribute__((visibility("default"))) bool npumem_acl_double_call_counts(
    npumem::DeviceCallCounts* out) {
  std::lock_guard lock(npu().mutex);
  if (!npu().device || out == nullptr) return false;
  *out = npu().device->call_counts();
  return true;
}

// Queues a simulated kernel on a stream / finishes the oldest one there; false when
// ACL is not initialised.
__attribute__((visibility("default"))) bool npumem_acl_double_launch_kernel(std::uint64_t stream) {
  std::lock_guard lock(npu().mutex);
  if (!npu().device) return false;
  npu().device->launch_kernel(stream);
  return true;
}

__attribute__((visibility("default"))) bool npumem_acl_double_finish_kernel(std::uint64_t stream) {
  std::lock_guard lock(npu().mutex);
  if (!npu().device) return false;
  npu().device->finish_kernel(stream);
  return true;
}

// Events created and not yet destroyed.
__attribute__((visibility("default"))) std::size_t npumem_acl_double_live_events() {
  std::lock_guard lock(npu().mutex);
  return npu().events.size();
}

__attribute__((visibility("default"))) bool npumem_acl_double_initialised() {
  std::lock_guard lock(npu().mutex);
  return npu().device != nullptr;
}

__attribute__((visibility("default"))) std::int64_t npumem_acl_double_device_refs() {
  std::lock_guard lock(npu().mutex);
  return npu().device_refs;
}

}  // extern "C"
