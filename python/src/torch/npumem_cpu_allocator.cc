#include "npumem_cpu_allocator.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace npumem::python {
namespace {

// The deleter is a plain function of the pointer, so the devices tensors may hold
// memory of are global. Entries are added, never removed.
std::array<std::atomic<const AllocatorBridge*>, NpumemCpuAllocator::kMaxDevices> g_served{};
std::atomic<std::size_t> g_served_count{0};
std::atomic<const AllocatorBridge*> g_default{nullptr};
std::mutex g_serve_mutex;  // serializes additions only
thread_local const AllocatorBridge* t_routed = nullptr;

c10::Device cpu() {
  return c10::Device(c10::DeviceType::CPU);
}

const AllocatorBridge* current() {
  return t_routed != nullptr ? t_routed : g_default.load(std::memory_order_acquire);
}

// With one device there is nothing to search: its deallocate() reports foreign pointers.
const AllocatorBridge* owner_of(void* ptr) {
  const std::size_t count = g_served_count.load(std::memory_order_acquire);
  if (count == 1) return g_served[0].load(std::memory_order_relaxed);
  const AllocatorBridge* first = current();
  if (first != nullptr && first->owns(first->allocator, ptr)) return first;
  for (std::size_t i = 0; i < count; ++i) {
    const AllocatorBridge* bridge = g_served[i].load(std::memory_order_relaxed);
    if (bridge != first && bridge->owns(bridge->allocator, ptr)) return bridge;
  }
  return nullptr;
}

// What torch.profiler(profile_memory=True) records for PyTorch's own CPU allocator.
void report_to_profiler(const AllocatorBridge& bridge, void* ptr, std::int64_t delta) {
  if (!c10::memoryProfilingEnabled()) return;
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
  bridge.totals(bridge.allocator, &allocated, &reserved);
  c10::reportMemoryUsageToProfiler(ptr, delta, static_cast<std::size_t>(allocated),
                                   static_cast<std::size_t>(reserved), cpu());
}

// A deleter cannot throw; freeing memory npumem does not hold means the heap is
// corrupt, so stop as the C library's free() does.
[[noreturn]] void foreign_free(void* ptr, const std::string& error) {
  std::fprintf(stderr, "npumem: a PyTorch CPU tensor freed memory npumem does not hold (%p): %s\n",
               ptr, error.c_str());
  std::abort();
}

void delete_memory(void* ptr) {
  if (ptr == nullptr) return;
  const AllocatorBridge* owner = owner_of(ptr);
  if (owner == nullptr) foreign_free(ptr, "no served device holds it");
  if (c10::memoryProfilingEnabled()) {
    report_to_profiler(*owner, ptr,
                       -static_cast<std::int64_t>(owner->allocation_size(owner->allocator, ptr)));
  }
  std::string error;
  if (!owner->deallocate(owner->allocator, ptr, &error)) foreign_free(ptr, error);
}

}  // namespace

void NpumemCpuAllocator::serve(const AllocatorBridge& bridge) {
  std::lock_guard lock(g_serve_mutex);
  if (serves(bridge)) return;
  const std::size_t count = g_served_count.load(std::memory_order_relaxed);
  if (count == kMaxDevices) {
    throw std::length_error("PyTorch's CPU tensors are served by " + std::to_string(kMaxDevices) +
                            " npumem devices already, the most one process may have");
  }
  g_served[count].store(&bridge, std::memory_order_relaxed);
  g_served_count.store(count + 1, std::memory_order_release);
}

bool NpumemCpuAllocator::serves(const AllocatorBridge& bridge) {
  const std::size_t count = g_served_count.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i) {
    if (g_served[i].load(std::memory_order_relaxed) == &bridge) return true;
  }
  return false;
}

void NpumemCpuAllocator::set_default(const AllocatorBridge& bridge) {
  g_default.store(&bridge, std::memory_order_release);
}

const AllocatorBridge* NpumemCpuAllocator::default_device() {
  return g_default.load(std::memory_order_acquire);
}

const AllocatorBridge* NpumemCpuAllocator::route(const AllocatorBridge* bridge) {
  const AllocatorBridge* previous = t_routed;
  t_routed = bridge;
  return previous;
}

c10::DataPtr NpumemCpuAllocator::allocate(std::size_t bytes) const {
  if (bytes == 0) return {nullptr, nullptr, &delete_memory, cpu()};
  const AllocatorBridge& bridge = *current();
  std::string error;
  bool out_of_memory = false;
  void* ptr = bridge.allocate(bridge.allocator, bytes, &error, &out_of_memory);
  if (ptr == nullptr) {
    if (out_of_memory) C10_THROW_ERROR(OutOfMemoryError, "npumem: " + error);
    C10_THROW_ERROR(Error, "npumem: " + error);
  }
  report_to_profiler(bridge, ptr, static_cast<std::int64_t>(bytes));
  return {ptr, ptr, &delete_memory, cpu()};
}

c10::DeleterFnPtr NpumemCpuAllocator::raw_deleter() const {
  return &delete_memory;
}

}  // namespace npumem::python
