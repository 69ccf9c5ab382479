#include "acl_runtime.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "npumem/errors.h"

namespace npumem {

using acl::aclError;

struct AclRuntime::Library {
  void* handle = nullptr;
  std::string path;
  AclEntryPoints api;
};

namespace {

constexpr const char* kLibraryName = "libascendcl.so";

[[noreturn]] void reject(const std::string& spec, const std::string& problem) {
  throw ConfigError("bad device spec '" + spec + "': " + problem);
}

// Where CANN puts the library: the toolkit's set_env.sh exports ASCEND_HOME_PATH and
// ASCEND_TOOLKIT_HOME; the default install prefix is /usr/local/Ascend.
std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  for (const char* variable : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
    if (const char* home = std::getenv(variable); home != nullptr && *home != '\0') {
      paths.push_back(std::string(home) + "/lib64/" + kLibraryName);
    }
  }
  for (const char* prefix : {"/usr/local/Ascend/ascend-toolkit/latest/lib64/",
                             "/usr/local/Ascend/ascend-toolkit/latest/runtime/lib64/",
                             "/usr/local/Ascend/latest/lib64/"}) {
    paths.push_back(std::string(prefix) + kLibraryName);
  }
  paths.emplace_back(kLibraryName);  // the loader path (LD_LIBRARY_PATH, ld.so.cache)
  return paths;
}

template <typename Function>
void resolve(void* handle, const char* symbol, Function& out) {
  out = reinterpret_cast<Function>(dlsym(handle, symbol));
}

// Resolves the entry points; returns the first required one that is missing.
std::string resolve_all(void* handle, AclEntryPoints& api) {
  std::string missing;
  const auto require = [&](const char* symbol, auto& out) {
    resolve(handle, symbol, out);
    if (out == nullptr && missing.empty()) missing = symbol;
  };
  require("aclInit", api.init);
  require("aclFinalize", api.finalize);
  require("aclrtSetDevice", api.set_device);
  require("aclrtResetDevice", api.reset_device);
  require("aclrtGetDeviceCount", api.get_device_count);
  require("aclrtGetMemInfo", api.get_mem_info);
  require("aclrtMalloc", api.malloc);
  require("aclrtFree", api.free);
  require("aclrtMemcpy", api.memcpy);
  resolve(handle, "aclGetRecentErrMsg", api.recent_error);
  if (!missing.empty()) return missing;
  AclEntryPoints vmm = api;
  resolve(handle, "aclrtReserveMemAddress", vmm.reserve_address);
  resolve(handle, "aclrtReleaseMemAddress", vmm.release_address);
  resolve(handle, "aclrtMallocPhysical", vmm.malloc_physical);
  resolve(handle, "aclrtFreePhysical", vmm.free_physical);
  resolve(handle, "aclrtMapMem", vmm.map);
  resolve(handle, "aclrtUnmapMem", vmm.unmap);
  resolve(handle, "aclrtMemGetAllocationGranularity", vmm.get_granularity);
  // Half a group is no group: expandable segments need every one of these calls.
  if (vmm.reserve_address && vmm.release_address && vmm.malloc_physical && vmm.free_physical &&
      vmm.map && vmm.unmap && vmm.get_granularity) {
    api = vmm;
  }
  // The event group (stream-ordered reuse): all or none, too.
  AclEntryPoints events = api;
  resolve(handle, "aclrtCreateEvent", events.create_event);
  resolve(handle, "aclrtRecordEvent", events.record_event);
  resolve(handle, "aclrtQueryEventStatus", events.query_event);
  resolve(handle, "aclrtDestroyEvent", events.destroy_event);
  if (events.create_event && events.record_event && events.query_event && events.destroy_event) {
    api = events;
  }
  return {};
}

// Opens the library once per process; it stays loaded (ACL keeps threads and state
// that must not vanish under them). Throws ConfigError saying where it looked.
std::shared_ptr<const AclRuntime::Library> load(const std::string& spec) {
  static std::mutex mutex;
  static std::shared_ptr<const AclRuntime::Library> loaded;
  std::lock_guard lock(mutex);
  if (loaded) return loaded;
  std::vector<std::string> paths;
  const char* chosen = std::getenv("NPUMEM_ACL_LIBRARY");
  const bool explicit_path = chosen != nullptr && *chosen != '\0';
  if (explicit_path) {
    paths.emplace_back(chosen);
  } else {
    paths = candidate_paths();
  }
  std::string tried;
  for (const std::string& path : paths) {
    // A library the process already has (torch_npu loaded CANN) is the one to use.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle == nullptr) handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + (why != nullptr ? std::string(why) : path + ": not loadable");
      continue;
    }
    auto library = std::make_shared<AclRuntime::Library>();
    library->handle = handle;
    library->path = path;
    if (const std::string missing = resolve_all(handle, library->api); !missing.empty()) {
      dlclose(handle);
      tried += "\n  " + path + ": has no " + missing;
      continue;
    }
    loaded = std::move(library);
    return loaded;
  }
  reject(spec, std::string("no usable libascendcl.so (Ascend CANN is not installed or not "
                           "found; ") +
                   (explicit_path ? "NPUMEM_ACL_LIBRARY names it"
                                  : "set NPUMEM_ACL_LIBRARY to its path, or source CANN's "
                                    "set_env.sh") +
                   "). Tried:" + tried);
}

}  // namespace

std::string_view acl_error_name(aclError error) {
  static constexpr std::array<std::pair<aclError, std::string_view>, 25> kNames = {{
      {acl::ACL_SUCCESS, "ACL_SUCCESS"},
      {acl::ACL_ERROR_INVALID_PARAM, "ACL_ERROR_INVALID_PARAM"},
      {acl::ACL_ERROR_UNINITIALIZE, "ACL_ERROR_UNINITIALIZE"},
      {acl::ACL_ERROR_REPEAT_INITIALIZE, "ACL_ERROR_REPEAT_INITIALIZE"},
      {acl::ACL_ERROR_REPEAT_FINALIZE, "ACL_ERROR_REPEAT_FINALIZE"},
      {acl::ACL_ERROR_BAD_ALLOC, "ACL_ERROR_BAD_ALLOC"},
      {acl::ACL_ERROR_API_NOT_SUPPORT, "ACL_ERROR_API_NOT_SUPPORT"},
      {acl::ACL_ERROR_INVALID_DEVICE, "ACL_ERROR_INVALID_DEVICE"},
      {acl::ACL_ERROR_MEMORY_ADDRESS_UNALIGNED, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED"},
      {acl::ACL_ERROR_INVALID_RESOURCE_HANDLE, "ACL_ERROR_INVALID_RESOURCE_HANDLE"},
      {acl::ACL_ERROR_FEATURE_UNSUPPORTED, "ACL_ERROR_FEATURE_UNSUPPORTED"},
      {acl::ACL_ERROR_STORAGE_OVER_LIMIT, "ACL_ERROR_STORAGE_OVER_LIMIT"},
      {acl::ACL_ERROR_INTERNAL_ERROR, "ACL_ERROR_INTERNAL_ERROR"},
      {acl::ACL_ERROR_FAILURE, "ACL_ERROR_FAILURE"},
      {acl::ACL_ERROR_RT_FAILURE, "ACL_ERROR_RT_FAILURE"},
      {acl::ACL_ERROR_DRV_FAILURE, "ACL_ERROR_DRV_FAILURE"},
      {acl::ACL_ERROR_RT_PARAM_INVALID, "ACL_ERROR_RT_PARAM_INVALID"},
      {acl::ACL_ERROR_RT_INVALID_DEVICEID, "ACL_ERROR_RT_INVALID_DEVICEID"},
      {acl::ACL_ERROR_RT_CONTEXT_NULL, "ACL_ERROR_RT_CONTEXT_NULL"},
      {acl::ACL_ERROR_RT_ADDR_UNALIGNED, "ACL_ERROR_RT_ADDR_UNALIGNED"},
      {acl::ACL_ERROR_RT_INVALID_HANDLE, "ACL_ERROR_RT_INVALID_HANDLE"},
      {acl::ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT"},
      {acl::ACL_ERROR_RT_MEMORY_ALLOCATION, "ACL_ERROR_RT_MEMORY_ALLOCATION"},
      {acl::ACL_ERROR_RT_MEMORY_FREE, "ACL_ERROR_RT_MEMORY_FREE"},
      {acl::ACL_ERROR_RT_NO_DEVICE, "ACL_ERROR_RT_NO_DEVICE"},
  }};
  for (const auto& [code, name] : kNames) {
    if (code == error) return name;
  }
  return {};
}

std::shared_ptr<AclRuntime> AclRuntime::acquire(const std::string& spec) {
  static std::mutex mutex;
  static std::weak_ptr<AclRuntime> current;
  std::shared_ptr<const Library> library = load(spec);
  std::lock_guard lock(mutex);
  if (auto alive = current.lock()) return alive;
  const aclError error = library->api.init(nullptr);
  // Another user (torch_npu) initialised ACL first: it owns aclFinalize, not npumem.
  const bool owns_init = error == acl::ACL_SUCCESS;
  if (!owns_init && error != acl::ACL_ERROR_REPEAT_INITIALIZE) {
    const std::shared_ptr<AclRuntime> probe(new AclRuntime(library, false));
    reject(spec, "aclInit failed: " + probe->describe(error));
  }
  std::shared_ptr<AclRuntime> runtime(new AclRuntime(std::move(library), owns_init));
  current = runtime;
  return runtime;
}

AclRuntime::AclRuntime(std::shared_ptr<const Library> library, bool owns_init)
    : library_(std::move(library)),
      api_(library_->api),
      path_(library_->path),
      owns_init_(owns_init) {}

// CANN advises against aclFinalize in destructors of static objects (exit order);
// this runs when the last AclDevice goes, which the CLI and tests do inside main.
AclRuntime::~AclRuntime() {
  if (owns_init_) api_.finalize();
}

std::string AclRuntime::describe(aclError error) const {
  std::string text = "ACL error " + std::to_string(error);
  if (const std::string_view name = acl_error_name(error); !name.empty()) {
    text += " (" + std::string(name) + ")";
  }
  if (api_.recent_error != nullptr) {
    if (const char* message = api_.recent_error(); message != nullptr && *message != '\0') {
      text += ": " + std::string(message);
    }
  }
  return text;
}

void AclRuntime::discard_error() const {
  if (api_.recent_error != nullptr) api_.recent_error();
}

}  // namespace npumem
