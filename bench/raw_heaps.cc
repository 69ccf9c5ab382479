#include "raw_heaps.h"

#include <dlfcn.h>
#include <mimalloc.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace npumem::bench {
namespace {

void* system_allocate(std::size_t bytes) {
  return std::malloc(bytes);
}
void system_deallocate(void* ptr) {
  std::free(ptr);
}

// Debian's libmimalloc exports malloc and free too: linked normally, it would replace
// the C library's heap for the whole process (the malloc baseline and npumem's own
// bookkeeping included). Loaded RTLD_LOCAL, only mi_malloc/mi_free reach it.
void* load_mimalloc() {
  void* library = dlopen(NPUMEM_MIMALLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    throw std::runtime_error(std::string("cannot load mimalloc: ") + dlerror());
  }
  return library;
}

void* mimalloc_symbol(const char* name) {
  static void* const library = load_mimalloc();
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) throw std::runtime_error(std::string("mimalloc lacks ") + name);
  return symbol;
}

}  // namespace

RawHeap system_heap() {
  return {"malloc", system_allocate, system_deallocate};
}

RawHeap mimalloc_heap() {
  return {"mimalloc", reinterpret_cast<decltype(&mi_malloc)>(mimalloc_symbol("mi_malloc")),
          reinterpret_cast<decltype(&mi_free)>(mimalloc_symbol("mi_free"))};
}

}  // namespace npumem::bench
