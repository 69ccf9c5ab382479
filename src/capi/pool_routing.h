// npumem_set_pool: the pool this thread's npumem_allocate and npumem_malloc calls go to,
// by name, on whichever allocator they reach. Kept as a name and scoped per call, not as
// a PoolScope held between calls: a scope left by a thread would outlive a destroyed
// allocator, and would keep a served model's pool from ever being removed.
#pragma once

#include <cstddef>
#include <string>

#include "npumem/allocator.h"

namespace npumem::capi {

// "" (or nullptr): the default pool.
void set_thread_pool(const char* name);
// Allocates on `allocator` in this thread's pool (ConfigError for one it lacks).
void* allocate_in_thread_pool(Allocator& allocator, std::size_t size, StreamId stream = 0);

}  // namespace npumem::capi
