// The part of Ascend's ACL C API (libascendcl.so) that npumem calls, written from
// CANN's public runtime reference (repository hicann/runtime, docs/api_docs/<name>.md;
// each declaration names its page). npumem does not include CANN's headers: the
// library is loaded at run time, so npumem builds and starts where CANN is absent.
// The test double of libascendcl.so (tests/acl/) implements these same declarations.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npumem::acl {

// aclError.md
using aclError = int;
inline constexpr aclError ACL_SUCCESS = 0;
inline constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
inline constexpr aclError ACL_ERROR_UNINITIALIZE = 100001;
inline constexpr aclError ACL_ERROR_REPEAT_INITIALIZE = 100002;
inline constexpr aclError ACL_ERROR_REPEAT_FINALIZE = 100037;
inline constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;
inline constexpr aclError ACL_ERROR_API_NOT_SUPPORT = 200001;
inline constexpr aclError ACL_ERROR_INVALID_DEVICE = 200002;
inline constexpr aclError ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003;
inline constexpr aclError ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005;
inline constexpr aclError ACL_ERROR_FEATURE_UNSUPPORTED = 200006;
inline constexpr aclError ACL_ERROR_STORAGE_OVER_LIMIT = 300000;
inline constexpr aclError ACL_ERROR_INTERNAL_ERROR = 500000;
inline constexpr aclError ACL_ERROR_FAILURE = 500001;
inline constexpr aclError ACL_ERROR_RT_FAILURE = 500003;
inline constexpr aclError ACL_ERROR_DRV_FAILURE = 500004;
inline constexpr aclError ACL_ERROR_RT_PARAM_INVALID = 107000;
inline constexpr aclError ACL_ERROR_RT_INVALID_DEVICEID = 107001;
inline constexpr aclError ACL_ERROR_RT_CONTEXT_NULL = 107002;
inline constexpr aclError ACL_ERROR_RT_ADDR_UNALIGNED = 107008;
inline constexpr aclError ACL_ERROR_RT_INVALID_HANDLE = 107017;
inline constexpr aclError ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
inline constexpr aclError ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
inline constexpr aclError ACL_ERROR_RT_MEMORY_FREE = 207002;
inline constexpr aclError ACL_ERROR_RT_NO_DEVICE = 207004;

// aclrtMemMallocPolicy.md (values may be or-ed: a page policy with a bandwidth type)
enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST,
  ACL_MEM_MALLOC_HUGE_ONLY,
  ACL_MEM_MALLOC_NORMAL_ONLY,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
  ACL_MEM_MALLOC_HUGE1G_ONLY,
  ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
  ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100U,
  ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000U,
  ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000U,
};

// aclrtMemAttr.md
enum aclrtMemAttr {
  ACL_DDR_MEM,
  ACL_HBM_MEM,
  ACL_DDR_MEM_HUGE,
  ACL_DDR_MEM_NORMAL,
  ACL_HBM_MEM_HUGE,
  ACL_HBM_MEM_NORMAL,
  ACL_DDR_MEM_P2P_HUGE,
  ACL_DDR_MEM_P2P_NORMAL,
  ACL_HBM_MEM_P2P_HUGE,
  ACL_HBM_MEM_P2P_NORMAL,
  ACL_HBM_MEM_HUGE1G,
  ACL_HBM_MEM_P2P_HUGE1G,
  ACL_MEM_NORMAL,
  ACL_MEM_HUGE,
  ACL_MEM_HUGE1G,
  ACL_MEM_P2P_NORMAL,
  ACL_MEM_P2P_HUGE,
  ACL_MEM_P2P_HUGE1G,
};

// aclrtMemcpyKind.md
enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST,
  ACL_MEMCPY_HOST_TO_DEVICE,
  ACL_MEMCPY_DEVICE_TO_HOST,
  ACL_MEMCPY_DEVICE_TO_DEVICE,
  ACL_MEMCPY_DEFAULT,
  ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE,
  ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
  ACL_MEMCPY_INTER_DEVICE_TO_DEVICE,
};

// aclrtMemGranularityOptions.md
enum aclrtMemGranularityOptions {
  ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
  ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
  ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF = 0xFFFF,
};

// aclrtMemHandleType.md, aclrtMemAllocationType.md, aclrtMemLocationType.md
enum aclrtMemHandleType { ACL_MEM_HANDLE_TYPE_NONE = 0 };
enum aclrtMemAllocationType { ACL_MEM_ALLOCATION_TYPE_PINNED = 0 };
enum aclrtMemLocationType {
  ACL_MEM_LOCATION_TYPE_HOST = 0,
  ACL_MEM_LOCATION_TYPE_DEVICE,
  ACL_MEM_LOCATION_TYPE_UNREGISTERED,
  ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4,
};

// aclrtMemLocation.md
struct aclrtMemLocation {
  std::uint32_t id;
  aclrtMemLocationType type;
};

// aclrtPhysicalMemProp.md
struct aclrtPhysicalMemProp {
  aclrtMemHandleType handleType;
  aclrtMemAllocationType allocationType;
  aclrtMemAttr memAttr;
  aclrtMemLocation location;
  std::uint64_t reserve;
};

// aclrtDrvMemHandle.md, aclrtEvent.md, aclrtStream.md
using aclrtDrvMemHandle = void*;
using aclrtEvent = void*;
using aclrtStream = void*;

// aclrtEventRecordedStatus.md
enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1,
};

// The entry points, one type per page.
using aclInit_t = aclError (*)(const char* configPath);            // aclInit.md
using aclFinalize_t = aclError (*)();                              // aclFinalize.md
using aclGetRecentErrMsg_t = const char* (*)();                    // aclGetRecentErrMsg.md
using aclrtSetDevice_t = aclError (*)(std::int32_t deviceId);      // aclrtSetDevice.md
using aclrtResetDevice_t = aclError (*)(std::int32_t deviceId);    // aclrtResetDevice.md
using aclrtGetDeviceCount_t = aclError (*)(std::uint32_t* count);  // aclrtGetDeviceCount.md
using aclrtGetMemInfo_t = aclError (*)(aclrtMemAttr attr, std::size_t* free,
                                       std::size_t* total);  // aclrtGetMemInfo.md
using aclrtMalloc_t = aclError (*)(void** devPtr, std::size_t size,
                                   aclrtMemMallocPolicy policy);  // aclrtMalloc.md
using aclrtFree_t = aclError (*)(void* devPtr);                   // aclrtFree.md
using aclrtMemcpy_t = aclError (*)(void* dst, std::size_t destMax, const void* src,
                                   std::size_t count, aclrtMemcpyKind kind);  // aclrtMemcpy.md
using aclrtReserveMemAddress_t = aclError (*)(void** virPtr, std::size_t size,
                                              std::size_t alignment, void* expectPtr,
                                              std::uint64_t flags);  // aclrtReserveMemAddress.md
using aclrtReleaseMemAddress_t = aclError (*)(void* virPtr);         // aclrtReleaseMemAddress.md
using aclrtMallocPhysical_t = aclError (*)(aclrtDrvMemHandle* handle, std::size_t size,
                                           const aclrtPhysicalMemProp* prop,
                                           std::uint64_t flags);     // aclrtMallocPhysical.md
using aclrtFreePhysical_t = aclError (*)(aclrtDrvMemHandle handle);  // aclrtFreePhysical.md
using aclrtMapMem_t = aclError (*)(void* virPtr, std::size_t size, std::size_t offset,
                                   aclrtDrvMemHandle handle,
                                   std::uint64_t flags);  // aclrtMapMem.md
using aclrtUnmapMem_t = aclError (*)(void* virPtr);       // aclrtUnmapMem.md
using aclrtMemGetAllocationGranularity_t =
    aclError (*)(aclrtPhysicalMemProp* prop, aclrtMemGranularityOptions option,
                 std::size_t* granularity);  // aclrtMemGetAllocationGranularity.md

using aclrtCreateEvent_t = aclError (*)(aclrtEvent* event);  // aclrtCreateEvent.md
using aclrtRecordEvent_t = aclError (*)(aclrtEvent event,
                                        aclrtStream stream);  // aclrtRecordEvent.md
using aclrtQueryEventStatus_t =
    aclError (*)(aclrtEvent event, aclrtEventRecordedStatus* status);  // aclrtQueryEventStatus.md
using aclrtDestroyEvent_t = aclError (*)(aclrtEvent event);            // aclrtDestroyEvent.md

// aclrtMalloc.md: the driver rounds a size up to a multiple of 32 and adds 32 bytes;
// with ACL_MEM_MALLOC_HUGE_FIRST a request above 1 MiB is then served in 2 MiB huge
// pages (aclrtMemMallocPolicy.md), so 2 MiB asked costs 4 MiB.
inline constexpr std::size_t kMallocAlignment = 32;
inline constexpr std::size_t kMallocPadding = 32;
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kHugeThreshold = std::size_t{1} << 20;

// The bytes the driver allocates for aclrtMalloc(size) with ACL_MEM_MALLOC_HUGE_FIRST.
constexpr std::size_t malloc_cost(std::size_t size) {
  const std::size_t padded =
      (size + kMallocAlignment - 1) / kMallocAlignment * kMallocAlignment + kMallocPadding;
  return size > kHugeThreshold ? (padded + kHugePage - 1) / kHugePage * kHugePage : padded;
}

}  // namespace npumem::acl
