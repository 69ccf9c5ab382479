#include "capi/device_registry.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "capi/abi_guard.h"
#include "capi/process_stats_page.h"
#include "npumem/errors.h"
#include "npumem/process_allocators.h"

namespace npumem::capi {
namespace {

// Constant-initialised, so npumem_malloc works even from other static constructors.
std::array<std::atomic<npumem_allocator*>, kMaxDevices> allocators{};
// Written under creation_mutex before the allocator is stored; read after loading it.
std::array<std::string, kMaxDevices> specs;
std::mutex creation_mutex;

void check_index(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw ArgumentError("device index " + std::to_string(device) + " is out of range [0, " +
                        std::to_string(kMaxDevices) + ")");
  }
}

// Unset or empty (`NPUMEM_DEVICE= cmd`): the fallback.
std::string environment_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : value;
}

bool names_an_id(std::string_view options) {
  while (!options.empty()) {
    const std::size_t comma = options.find(',');
    if (options.substr(0, comma).starts_with("id=")) return true;
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return false;
}

// A device's error quotes the spec it was given; the user wrote it without the index that
// spec_for_device appended.
std::string quoting_as_written(std::string message, const std::string& indexed,
                               const std::string& written) {
  const std::string quoted = "'" + indexed + "'";
  const std::size_t at = message.find(quoted);
  if (at != std::string::npos) message.replace(at, quoted.size(), "'" + written + "'");
  return message;
}

// Needs creation_mutex. `spec_source`, `conf_source`: the environment variables the
// spec and the config came from (nullptr: the caller's), named in their errors.
npumem_allocator& make_locked(int device, const std::string& spec, const Config& config,
                              const char* spec_source, const char* conf_source) {
  std::shared_ptr<Device> made;
  const std::string indexed = spec_for_device(spec, device);
  try {
    made = make_device(indexed);
  } catch (const ConfigError& error) {
    throw ConfigError((spec_source == nullptr ? "" : std::string(spec_source) + ": ") +
                      quoting_as_written(error.what(), indexed, spec));
  }
  // Intentionally never deleted: see the header.
  npumem_allocator* handle = nullptr;
  try {
    handle = new npumem_allocator(std::move(made), config, /*process_wide_allocator=*/true);
  } catch (const ConfigError& error) {
    // Settings refused only once the allocator is made (strategy:static without its
    // static_size), as those refused as they were read.
    throw ConfigError((conf_source == nullptr ? "" : std::string(conf_source) + ": ") +
                      error.what());
  }
  specs[device] = spec;
  allocators[device].store(handle, std::memory_order_release);
  publish_on_stats_page(*handle->allocator);
  return *handle;
}

npumem_allocator& made_from_environment(int device) {
  if (npumem_allocator* existing = find_device_allocator(device)) return *existing;
  std::lock_guard lock(creation_mutex);
  if (npumem_allocator* made_meanwhile = allocators[device].load(std::memory_order_acquire)) {
    return *made_meanwhile;
  }
  const Config config = config_from_environment();
  npumem_allocator& made = make_locked(device, environment_or("NPUMEM_DEVICE", "sim"), config,
                                       "NPUMEM_DEVICE", "NPUMEM_ALLOC_CONF");
  // Made behind a framework's back (npumem_malloc): stderr is the one place a user
  // sees, e.g., that expandable segments fell back.
  for (const std::string& warning : made.allocator->warnings()) {
    std::fprintf(stderr, "npumem: device %d: %s\n", device, warning.c_str());
  }
  return made;
}

}  // namespace

std::string spec_for_device(std::string_view spec, int device) {
  const std::string index = std::to_string(device);
  if (spec == "cuda") return "cuda:" + index;
  if (spec == "acl") return "acl:" + index;
  if (spec.starts_with("acl,")) return "acl:" + index + std::string(spec.substr(3));
  if (spec == "sim") return "sim:id=" + index;
  if (spec.starts_with("sim:") && !names_an_id(spec.substr(4))) {
    return std::string(spec) + ",id=" + index;
  }
  return std::string(spec);
}

npumem_allocator* find_device_allocator(int device) {
  check_index(device);
  return allocators[device].load(std::memory_order_acquire);
}

npumem_allocator& device_allocator(int device) {
  return made_from_environment(device);
}

void init_device_allocator(int device, const char* spec, const char* conf) {
  check_index(device);
  std::lock_guard lock(creation_mutex);
  if (allocators[device].load(std::memory_order_acquire) != nullptr) {
    throw ArgumentError("device " + std::to_string(device) +
                        " has an allocator already (npumem_init must come before its first "
                        "npumem_malloc and only once)");
  }
  const Config config = conf == nullptr ? config_from_environment() : parse_config(conf);
  const char* conf_source = conf == nullptr ? "NPUMEM_ALLOC_CONF" : nullptr;
  if (spec == nullptr) {
    make_locked(device, environment_or("NPUMEM_DEVICE", "sim"), config, "NPUMEM_DEVICE",
                conf_source);
  } else {
    make_locked(device, spec, config, nullptr, conf_source);
  }
}

}  // namespace npumem::capi

namespace npumem {

namespace {

void check_process_device(int device) {
  if (device < 0 || device >= kMaxProcessAllocators) {
    throw ConfigError("device index " + std::to_string(device) + " is out of range [0, " +
                      std::to_string(kMaxProcessAllocators) + ")");
  }
}

}  // namespace

static_assert(kMaxProcessAllocators == capi::kMaxDevices);

Allocator* find_process_allocator(int device) {
  check_process_device(device);
  npumem_allocator* handle = capi::allocators[device].load(std::memory_order_acquire);
  return handle == nullptr ? nullptr : &*handle->allocator;
}

Allocator& process_allocator(int device) {
  check_process_device(device);
  return *capi::made_from_environment(device).allocator;
}

Allocator& init_process_allocator(int device, const std::string& spec, const Config& config,
                                  const char* spec_source) {
  check_process_device(device);
  std::lock_guard lock(capi::creation_mutex);
  if (capi::allocators[device].load(std::memory_order_acquire) != nullptr) {
    throw ConfigError("npumem device " + std::to_string(device) + " exists already (spec '" +
                      capi::specs[device] + "'); initialise a device before first use");
  }
  return *capi::make_locked(device, spec, config, spec_source, nullptr).allocator;
}

std::string process_allocator_spec(int device) {
  check_process_device(device);
  return capi::allocators[device].load(std::memory_order_acquire) == nullptr ? std::string()
                                                                             : capi::specs[device];
}

std::vector<int> process_allocator_devices() {
  std::vector<int> devices;
  for (int device = 0; device < kMaxProcessAllocators; ++device) {
    if (capi::allocators[device].load(std::memory_order_acquire) != nullptr) {
      devices.push_back(device);
    }
  }
  return devices;
}

}  // namespace npumem
