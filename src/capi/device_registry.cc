#include "capi/device_registry.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "capi/abi_guard.h"
#include "npumem/config.h"
#include "npumem/errors.h"

namespace npumem::capi {
namespace {

// Constant-initialised, so npumem_malloc works even from other static constructors.
std::array<std::atomic<npumem_allocator*>, kMaxDevices> allocators{};
std::mutex creation_mutex;

void check_index(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw ArgumentError("device index " + std::to_string(device) + " is out of range [0, " +
                        std::to_string(kMaxDevices) + ")");
  }
}

std::string environment_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? fallback : value;
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

std::shared_ptr<Device> device_from_environment(int device) {
  try {
    return make_device(spec_for_device(environment_or("NPUMEM_DEVICE", "sim"), device));
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("NPUMEM_DEVICE: ") + error.what());
  }
}

// Needs creation_mutex.
void publish(int device, std::shared_ptr<Device> made, const Config& config) {
  // Intentionally never deleted: see the header.
  allocators[device].store(
      new npumem_allocator(std::move(made), config, /*process_wide_allocator=*/true),
      std::memory_order_release);
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
  if (npumem_allocator* existing = find_device_allocator(device)) return *existing;
  std::lock_guard lock(creation_mutex);
  if (npumem_allocator* made_meanwhile = allocators[device].load(std::memory_order_acquire)) {
    return *made_meanwhile;
  }
  const Config config = config_from_environment();
  publish(device, device_from_environment(device), config);
  return *allocators[device].load(std::memory_order_acquire);
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
  publish(device,
          spec == nullptr ? device_from_environment(device)
                          : make_device(spec_for_device(spec, device)),
          config);
}

}  // namespace npumem::capi
