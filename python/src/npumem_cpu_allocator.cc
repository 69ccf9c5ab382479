#include "npumem_cpu_allocator.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace npumem::python {
namespace {

// The deleter is a plain function of the pointer, so the one allocator whose memory
// tensors may hold is global. It is set once and never cleared.
const AllocatorBridge* g_bridge = nullptr;

c10::Device cpu() {
  return c10::Device(c10::DeviceType::CPU);
}

// What torch.profiler(profile_memory=True) records for PyTorch's own CPU allocator.
void report_to_profiler(void* ptr, std::int64_t delta) {
  if (!c10::memoryProfilingEnabled()) return;
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  g_bridge->totals(g_bridge->allocator, &allocated, &reserved);
  c10::reportMemoryUsageToProfiler(ptr, delta, static_cast<std::size_t>(allocated),
                                   static_cast<std::size_t>(reserved), cpu());
}

void delete_memory(void* ptr) {
  if (ptr == nullptr) return;
  if (c10::memoryProfilingEnabled()) {
    report_to_profiler(
        ptr, -static_cast<std::int64_t>(g_bridge->allocation_size(g_bridge->allocator, ptr)));
  }
  std::string error;
  if (!g_bridge->deallocate(g_bridge->allocator, ptr, &error)) {
    // A deleter cannot throw; freeing memory npumem does not hold means the heap
    // is corrupt, so stop as the C library's free() does.
    std::fprintf(stderr, "npumem: a PyTorch CPU tensor freed memory npumem does not hold: %s\n",
                 error.c_str());
    std::abort();
  }
}

}  // namespace

NpumemCpuAllocator::NpumemCpuAllocator(const AllocatorBridge& bridge) : bridge_(bridge) {
  g_bridge = &bridge;
}

c10::DataPtr NpumemCpuAllocator::allocate(std::size_t bytes) const {
  if (bytes == 0) return {nullptr, nullptr, &delete_memory, cpu()};
  std::string error;
  bool out_of_memory = false;
  void* ptr = bridge_.allocate(bridge_.allocator, bytes, &error, &out_of_memory);
  if (ptr == nullptr) {
    if (out_of_memory) C10_THROW_ERROR(OutOfMemoryError, "npumem: " + error);
    C10_THROW_ERROR(Error, "npumem: " + error);
  }
  report_to_profiler(ptr, static_cast<std::int64_t>(bytes));
  return {ptr, ptr, &delete_memory, cpu()};
}

c10::DeleterFnPtr NpumemCpuAllocator::raw_deleter() const {
  return &delete_memory;
}

}  // namespace npumem::python
