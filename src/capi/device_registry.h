// The process-wide allocators behind npumem_malloc / npumem_free: one per device index,
// made on first use (or by npumem_init) and kept until the process exits, because
// frameworks free tensors during static destruction.
#pragma once

#include <string>
#include <string_view>

#include "capi/handle.h"

namespace npumem::capi {

// Device indices 0 .. kMaxDevices-1 are accepted.
inline constexpr int kMaxDevices = 64;

// The allocator of a device index, or nullptr when none was made yet. Lock-free.
// Throws ArgumentError for an index out of range.
npumem_allocator* find_device_allocator(int device);
// The allocator of a device index, made from NPUMEM_DEVICE and NPUMEM_ALLOC_CONF when
// it does not exist yet.
npumem_allocator& device_allocator(int device);
// Makes the allocator of a device index from a spec and a config string (nullptr: read
// the environment). Throws ArgumentError when the index has one already.
void init_device_allocator(int device, const char* spec, const char* conf);

// The spec the allocator of a device index gets: a spec without an index ("cuda",
// "sim" or "sim:..." without id=) is given this one; any other spec is kept.
std::string spec_for_device(std::string_view spec, int device);

}  // namespace npumem::capi
