#include "device_registry.h"

#include <map>
#include <mutex>
#include <string_view>

#include "npumem/config.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#include "npumem/process_allocators.h"

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

// The bridge's context is the DeviceEntry.
Allocator& allocator_of(void* entry) {
  return *static_cast<DeviceEntry*>(entry)->allocator;
}

void* bridge_allocate(void* entry, std::size_t bytes, std::string* error, bool* out_of_memory) {
  try {
    return allocate_for_python(*static_cast<DeviceEntry*>(entry), bytes);
  } catch (const OutOfMemory& failure) {
    *error = failure.what();
    *out_of_memory = true;
  } catch (const std::exception& failure) {
    *error = failure.what();
    *out_of_memory = false;
  }
  return nullptr;
}

bool bridge_deallocate(void* entry, void* ptr, std::string* error) {
  try {
    allocator_of(entry).deallocate(ptr);
    return true;
  } catch (const std::exception& failure) {
    *error = failure.what();
    return false;
  }
}

bool bridge_owns(void* entry, const void* ptr) {
  return allocator_of(entry).owns(ptr);
}

std::size_t bridge_allocation_size(void* entry, const void* ptr) {
  try {
    return allocator_of(entry).allocation_size(ptr);
  } catch (const InvalidPointer&) {
    return 0;
  }
}

void bridge_totals(void* entry, std::int64_t* allocated, std::int64_t* reserved) {
  const Stats stats = allocator_of(entry).stats_leaving_caches();  // on every call while profiling
  *allocated = stats.allocated_bytes.all.current;
  *reserved = stats.reserved_bytes.all.current;
}

}  // namespace

void* allocate_for_python(DeviceEntry& device, std::size_t bytes, StreamId stream) {
  if (!device.recording_stacks.load(std::memory_order_acquire)) {
    return device.allocator->allocate(bytes, stream);
  }
  std::vector<std::shared_ptr<PythonStacks>> stacks;
  {
    std::lock_guard lock(device.stacks_mutex);
    stacks = device.stacks;
  }
  std::vector<PythonFrame> stack = PythonStacks::capture();  // before the allocator's lock
  void* ptr = device.allocator->allocate(bytes, stream);
  if (!stack.empty()) {
    for (const auto& each : stacks) each->remember(reinterpret_cast<std::uintptr_t>(ptr), stack);
  }
  return ptr;
}

void record_stacks(DeviceEntry& device, const std::shared_ptr<PythonStacks>& stacks) {
  std::lock_guard lock(device.stacks_mutex);
  device.stacks.push_back(stacks);
  device.recording_stacks.store(true, std::memory_order_release);
}

void stop_recording_stacks(DeviceEntry& device, const std::shared_ptr<PythonStacks>& stacks) {
  std::lock_guard lock(device.stacks_mutex);
  std::erase(device.stacks, stacks);
  device.recording_stacks.store(!device.stacks.empty(), std::memory_order_release);
}

bool spec_is_host_accessible(const std::string& spec) {
  try {
    return device_spec_is_host_accessible(spec);
  } catch (const ConfigError&) {
    return false;  // no device at all
  }
}

namespace {

// Needs the registry's mutex.
DeviceEntry& add_entry(Registry& reg, int index, std::string spec, Allocator& allocator) {
  auto entry = std::make_unique<DeviceEntry>();
  entry->index = index;
  entry->spec = std::move(spec);
  entry->host_accessible = spec_is_host_accessible(entry->spec);
  entry->allocator = &allocator;
  entry->bridge.allocator = entry.get();
  entry->bridge.allocate = bridge_allocate;
  entry->bridge.deallocate = bridge_deallocate;
  entry->bridge.owns = bridge_owns;
  entry->bridge.allocation_size = bridge_allocation_size;
  entry->bridge.totals = bridge_totals;
  DeviceEntry& result = *entry;
  reg.devices.emplace(index, std::move(entry));
  return result;
}

}  // namespace

DeviceEntry& create_device(int index, const std::string& spec, const std::string& conf,
                           const std::string& spec_source) {
  if (index < 0) throw ConfigError("device index " + std::to_string(index) + " is negative");
  const Config config = config_over_environment(conf, "conf");
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  Allocator& allocator = init_process_allocator(
      index, spec, config, spec_source.empty() ? nullptr : spec_source.c_str());
  return add_entry(reg, index, spec, allocator);
}

DeviceEntry* find_device(int index) {
  if (index < 0 || index >= kMaxProcessAllocators) return nullptr;
  Registry& reg = registry();
  std::lock_guard lock(reg.mutex);
  const auto found = reg.devices.find(index);
  if (found != reg.devices.end()) return found->second.get();
  // Made outside Python (npumem_malloc in the same process): wrap it now.
  Allocator* allocator = find_process_allocator(index);
  if (allocator == nullptr) return nullptr;
  return &add_entry(reg, index, process_allocator_spec(index), *allocator);
}

std::vector<int> device_indices() {
  std::vector<int> indices;
  for (const int index : process_allocator_devices()) {
    if (find_device(index) != nullptr) indices.push_back(index);
  }
  return indices;
}

}  // namespace npumem::python
