#include "device_registry.h"

#include <map>
#include <mutex>

#include "capi/device_registry.h"
#include "device/sim_spec.h"
#include "npumem/config.h"
#include "npumem/errors.h"

namespace npumem::python {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<int, std::unique_ptr<DeviceEntry>> devices;
};

// Leaked on purpose: no static destructor may free an allocator that tensors still use.
Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

void* bridge_allocate(void* allocator, std::size_t bytes, std::string* error, bool* out_of_memory) {
  try {
    return static_cast<Allocator*>(allocator)->allocate(bytes);
  } catch (const OutOfMemory& failure) {
    *error = failure.what();
    *out_of_memory = true;
  } catch (const std::exception& failure) {
    *error = failure.what();
    *out_of_memory = false;
  }
  return nullptr;
}

bool bridge_deallocate(void* allocator, void* ptr, std::string* error) {
  try {
    static_cast<Allocator*>(allocator)->deallocate(ptr);
    return true;
  } catch (const std::exception& failure) {
    *error = failure.what();
    return false;
  }
}

bool bridge_owns(void* allocator, const void* ptr) {
  return static_cast<Allocator*>(allocator)->owns(ptr);
}

std::size_t bridge_allocation_size(void* allocator, const void* ptr) {
  try {
    return static_cast<Allocator*>(allocator)->allocation_size(ptr);
  } catch (const InvalidPointer&) {
    return 0;
  }
}

void bridge_totals(void* allocator, std::int64_t* allocated, std::int64_t* reserved) {
  const Stats stats = static_cast<Allocator*>(allocator)->stats();
  *allocated = stats.allocated_bytes.all.current;
  *reserved = stats.reserved_bytes.all.current;
}

}  // namespace

bool spec_is_host_accessible(const std::string& spec) {
  const std::string word = spec.substr(0, spec.find(':'));
  if (word == "host") return true;
  if (word == "sim") return parse_sim_spec(spec).backing == Backing::host;
  return false;
}

DeviceEntry& create_device(int index, const std::string& spec, const std::string& conf) {
  if (index < 0) throw ConfigError("device index " + std::to_string(index) + " is negative");
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  if (reg.devices.contains(index)) {
    throw ConfigError("npumem device " + std::to_string(index) + " exists already (spec '" +
                      reg.devices.at(index)->spec + "'); initialise a device before first use");
  }
  auto entry = std::make_unique<DeviceEntry>();
  entry->index = index;
  entry->spec = spec;
  entry->host_accessible = spec_is_host_accessible(spec);
  // Named like the C ABI's devices: "sim" and "cuda" specs get the index (sim:<index>).
  entry->allocator = std::make_unique<Allocator>(make_device(capi::spec_for_device(spec, index)),
                                                 parse_config(conf, config_from_environment()));
  entry->bridge.allocator = entry->allocator.get();
  entry->bridge.allocate = bridge_allocate;
  entry->bridge.deallocate = bridge_deallocate;
  entry->bridge.owns = bridge_owns;
  entry->bridge.allocation_size = bridge_allocation_size;
  entry->bridge.totals = bridge_totals;
  DeviceEntry& result = *entry;
  reg.devices.emplace(index, std::move(entry));
  return result;
}

DeviceEntry* find_device(int index) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  const auto found = reg.devices.find(index);
  return found == reg.devices.end() ? nullptr : found->second.get();
}

std::vector<int> device_indices() {
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  std::vector<int> indices;
  for (const auto& [index, entry] : reg.devices) indices.push_back(index);
  return indices;
}

}  // namespace npumem::python
