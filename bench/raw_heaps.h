// The general-purpose heaps npumem is measured against, called the same way: the C
// library's malloc/free and mimalloc's mi_malloc/mi_free.
#pragma once

#include <cstddef>

namespace npumem::bench {

struct RawHeap {
  const char* name;
  void* (*allocate)(std::size_t bytes);
  void (*deallocate)(void* ptr);
};

RawHeap system_heap();
// Throws std::runtime_error when libmimalloc cannot be loaded.
RawHeap mimalloc_heap();

}  // namespace npumem::bench
