// libascendcl.so, loaded at run time: the entry points npumem uses (acl_api.h), ACL
// initialised while any AclDevice lives, and ACL error codes turned into text.
#pragma once

#include <memory>
#include <string>

#include "acl_api.h"

namespace npumem {

struct AclEntryPoints {
  acl::aclInit_t init = nullptr;
  acl::aclFinalize_t finalize = nullptr;
  acl::aclrtSetDevice_t set_device = nullptr;
  acl::aclrtResetDevice_t reset_device = nullptr;
  acl::aclrtGetDeviceCount_t get_device_count = nullptr;
  acl::aclrtGetMemInfo_t get_mem_info = nullptr;
  acl::aclrtMalloc_t malloc = nullptr;
  acl::aclrtFree_t free = nullptr;
  acl::aclrtMemcpy_t memcpy = nullptr;
  acl::aclGetRecentErrMsg_t recent_error = nullptr;  // optional
  // The virtual-memory group: all or none (older CANN / HDK lack it).
  acl::aclrtReserveMemAddress_t reserve_address = nullptr;
  acl::aclrtReleaseMemAddress_t release_address = nullptr;
  acl::aclrtMallocPhysical_t malloc_physical = nullptr;
  acl::aclrtFreePhysical_t free_physical = nullptr;
  acl::aclrtMapMem_t map = nullptr;
  acl::aclrtUnmapMem_t unmap = nullptr;
  acl::aclrtMemGetAllocationGranularity_t get_granularity = nullptr;

  // The event group, for stream-ordered reuse: all or none.
  acl::aclrtCreateEvent_t create_event = nullptr;
  acl::aclrtRecordEvent_t record_event = nullptr;
  acl::aclrtQueryEventStatus_t query_event = nullptr;
  acl::aclrtDestroyEvent_t destroy_event = nullptr;

  bool has_virtual_memory() const { return reserve_address != nullptr; }
  bool has_events() const { return create_event != nullptr; }
};

class AclRuntime {
 public:
  // The loaded and initialised runtime, shared by every AclDevice of the process.
  // Looks for the library in NPUMEM_ACL_LIBRARY alone when set, else in the CANN
  // install locations and then the loader path. Throws ConfigError naming spec,
  // where it looked and why, when there is no usable libascendcl.so.
  static std::shared_ptr<AclRuntime> acquire(const std::string& spec);

  ~AclRuntime();
  AclRuntime(const AclRuntime&) = delete;
  AclRuntime& operator=(const AclRuntime&) = delete;

  const AclEntryPoints& api() const { return api_; }
  const std::string& library_path() const { return path_; }

  // "ACL error 207001 (ACL_ERROR_RT_MEMORY_ALLOCATION): <aclGetRecentErrMsg text>".
  // Reading the recent message also clears it, as CANN asks after each failure.
  std::string describe(acl::aclError error) const;
  // Clears the recent message of a failure npumem expected and handled.
  void discard_error() const;

  struct Library;  // the dlopen handle and its entry points

 private:
  AclRuntime(std::shared_ptr<const Library> library, bool owns_init);

  std::shared_ptr<const Library> library_;
  const AclEntryPoints& api_;
  const std::string& path_;
  const bool owns_init_;  // npumem's aclInit started ACL, so npumem finalizes it
};

// The name CANN gives an error code ("ACL_ERROR_BAD_ALLOC"), or "" when unknown.
std::string_view acl_error_name(acl::aclError error);

}  // namespace npumem
