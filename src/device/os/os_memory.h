// The operating-system memory calls of the device layer, and the only place in npumem
// that makes them (mmap, munmap, memfd). Failures come back as nullptr / false / -1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace npumem::os {

// Address space without pages (PROT_NONE, no swap reserved), aligned to `alignment`
// (a power of two). Costs no memory until something is mapped into it.
void* reserve(std::size_t bytes, std::size_t alignment);

// Read-write private anonymous memory; untouched pages cost nothing.
void* map_anonymous(std::size_t bytes);

// Gives a reserved or mapped range back to the system.
void release(void* addr, std::size_t bytes);

// A shareable physical chunk (memfd of `bytes` bytes): a descriptor, or -1.
int create_shared(std::size_t bytes);
void close_shared(int fd);

// Maps the chunk read-write at addr, replacing what is there (MAP_FIXED).
bool map_shared_fixed(void* addr, std::size_t bytes, int fd);

// Turns a mapped range back into a PROT_NONE reservation: the pages go, the
// addresses stay reserved.
bool rereserve(void* addr, std::size_t bytes);

std::size_t page_size();
std::uint64_t physical_memory_bytes();

}  // namespace npumem::os
