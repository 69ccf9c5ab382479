// The allocators of this process, one per device index. npumem_malloc (the C ABI), the
// Python module npumem and npumem.torch all use these same objects, so memory counted by
// one is seen by the others. Each is made on first use from NPUMEM_DEVICE (default
// "sim") and NPUMEM_ALLOC_CONF, or earlier by init_process_allocator, and lives until
// the process exits (frameworks free tensors during static destruction). Each is
// published on this process's stats page for `npumem smi` / `npumem mon` unless the
// environment sets NPUMEM_STATS_PAGE=0.
#pragma once

#include <string>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/config.h"

namespace npumem {

// Device indices 0 .. kMaxProcessAllocators-1 are accepted.
inline constexpr int kMaxProcessAllocators = 64;

// The allocator of a device index, or nullptr when none was made yet. Lock-free.
// Throws ConfigError for an index out of range.
Allocator* find_process_allocator(int device);
// The allocator of a device index, made from the environment when it does not exist yet.
Allocator& process_allocator(int device);
// Makes the allocator of a device index from a device spec (a spec without an index,
// such as "sim" or "sim:hbm=1GiB", gets this one) and a config. Throws ConfigError for
// a bad spec (its message begins with `spec_source`, e.g. "NPUMEM_DEVICE", when given)
// or when the index has an allocator already.
Allocator& init_process_allocator(int device, const std::string& spec, const Config& config,
                                  const char* spec_source = nullptr);
// The device spec an allocator was made from, as given; "" when there is none.
std::string process_allocator_spec(int device);
// The device indices that have an allocator, in order.
std::vector<int> process_allocator_devices();

}  // namespace npumem
