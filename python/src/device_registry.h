// The Python module's view of this process's allocators (npumem/process_allocators.h,
// shared with npumem_malloc of libnpumem.so): one entry per device index, made when
// Python first meets the device. Entries are never destroyed: memory handed to PyTorch
// may be freed by any thread until the process exits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "allocator_bridge.h"
#include "npumem/allocator.h"

namespace npumem::python {

struct DeviceEntry {
  int index = 0;
  std::string spec;                // the device spec as given (the index is added as its id)
  bool host_accessible = false;    // its memory is real host memory (tensors may live there)
  Allocator* allocator = nullptr;  // the process's, never destroyed
  AllocatorBridge bridge;          // points at allocator; handed to npumem._torch
};

// Makes the device and its allocator; the config is `conf` over NPUMEM_ALLOC_CONF.
// Throws ConfigError for a bad spec or config, or when the index is taken already
// (also when npumem_malloc made it).
DeviceEntry& create_device(int index, const std::string& spec, const std::string& conf);
// nullptr when the index has no allocator yet (one npumem_malloc made is found).
DeviceEntry* find_device(int index);
std::vector<int> device_indices();

// True when the spec's memory is ordinary host memory: "host", or "sim" with backing=host.
bool spec_is_host_accessible(const std::string& spec);

}  // namespace npumem::python
