// The Python module's view of this process's allocators (npumem/process_allocators.h,
// shared with npumem_malloc of libnpumem.so): one entry per device index, made when
// Python first meets the device. Entries are never destroyed: memory handed to PyTorch
// may be freed by any thread until the process exits.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocator_bridge.h"
#include "npumem/allocator.h"
#include "python_stacks.h"

namespace npumem::python {

struct DeviceEntry {
  int index = 0;
  std::string spec;                // the device spec as given (the index is added as its id)
  bool host_accessible = false;    // its memory is real host memory (tensors may live there)
  Allocator* allocator = nullptr;  // the process's, never destroyed
  AllocatorBridge bridge;          // points at this entry; handed to npumem._torch
  // Set while Python stacks are taken (_record_memory_history, a LeakDetector's lines):
  // each allocation's stack is taken once and remembered by each.
  std::atomic<bool> recording_stacks{false};
  std::mutex stacks_mutex;
  std::vector<std::shared_ptr<PythonStacks>> stacks;
};

// An allocation for Python code (caching_allocator_alloc, PyTorch's tensors): with
// its Python stack remembered while stacks are recorded. Throws as Allocator::allocate.
void* allocate_for_python(DeviceEntry& device, std::size_t bytes, StreamId stream = 0);
// Starts remembering the stacks of allocate_for_python in `stacks`, or stops.
void record_stacks(DeviceEntry& device, const std::shared_ptr<PythonStacks>& stacks);
void stop_recording_stacks(DeviceEntry& device, const std::shared_ptr<PythonStacks>& stacks);

// Makes the device and its allocator; the config is `conf` over NPUMEM_ALLOC_CONF.
// Throws ConfigError for a bad spec or config, or when the index is taken already
// (also when npumem_malloc made it).
DeviceEntry& create_device(int index, const std::string& spec, const std::string& conf,
                           const std::string& spec_source);
// nullptr when the index has no allocator yet (one npumem_malloc made is found).
DeviceEntry* find_device(int index);
std::vector<int> device_indices();

// True when the spec's memory is ordinary host memory: "host", or "sim" with backing=host.
bool spec_is_host_accessible(const std::string& spec);

}  // namespace npumem::python
