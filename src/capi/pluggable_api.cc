// The pluggable-allocator entry points (PyTorch's CUDAPluggableAllocator signatures)
// and the calls that reach the process-wide allocators behind them.
#include <cstdio>

#include "capi/abi_guard.h"
#include "capi/device_registry.h"
#include "capi/pool_routing.h"
#include "capi/process_stats_page.h"
#include "npumem/npumem.h"

namespace {

using npumem::capi::ArgumentError;
using npumem::capi::guarded;

std::string pointer_text(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

}  // namespace

extern "C" {

void* npumem_malloc(ssize_t size, int device, void* stream) noexcept {
  void* result = nullptr;
  guarded([&] {
    if (size < 0) {
      throw ArgumentError("npumem_malloc: size " + std::to_string(size) + " is negative");
    }
    // The stream orders reuse (Allocator::allocate); the block remembers it, so the
    // free's stream argument (the same one, from PyTorch) is not needed.
    result = npumem::capi::allocate_in_thread_pool(
        *npumem::capi::device_allocator(device).allocator, static_cast<std::size_t>(size),
        reinterpret_cast<npumem::StreamId>(stream));
    return NPUMEM_OK;
  });
  return result;
}

void npumem_free(void* ptr, ssize_t /*size*/, int device, void* /*stream*/) noexcept {
  guarded([&] {
    if (ptr == nullptr) return NPUMEM_OK;
    npumem_allocator* handle = npumem::capi::find_device_allocator(device);
    if (handle == nullptr) {
      throw npumem::InvalidPointer("invalid free: pointer " + pointer_text(ptr) +
                                   " was not allocated on device " + std::to_string(device) +
                                   " (it has no allocator yet)");
    }
    try {
      npumem::capi::allocator_of(handle).deallocate(ptr);
    } catch (const npumem::InvalidPointer&) {
      // A live pointer of another device: name both, not only "not allocated here".
      for (int other = 0; other < npumem::capi::kMaxDevices; ++other) {
        npumem_allocator* holder = npumem::capi::find_device_allocator(other);
        if (other == device || holder == nullptr || !holder->allocator->owns(ptr)) continue;
        throw npumem::InvalidPointer("invalid free: pointer " + pointer_text(ptr) +
                                     " was allocated on device " + std::to_string(other) +
                                     ", not device " + std::to_string(device));
      }
      throw;
    }
    return NPUMEM_OK;
  });
}

// The record_stream_fn of the pluggable allocators carries no device: the allocator
// holding the pointer takes it (a pointer is live in at most one).
void npumem_record_stream(void* ptr, void* stream) noexcept {
  guarded([&] {
    for (int device = 0; device < npumem::capi::kMaxDevices; ++device) {
      npumem_allocator* handle = npumem::capi::find_device_allocator(device);
      if (handle == nullptr) continue;
      try {
        handle->allocator->record_stream(ptr, reinterpret_cast<npumem::StreamId>(stream));
        return NPUMEM_OK;
      } catch (const npumem::InvalidPointer&) {
        // not this device's
      }
    }
    throw npumem::InvalidPointer("record_stream: pointer " + pointer_text(ptr) +
                                 " is not live on any device");
  });
}

npumem_status_t npumem_init(int device, const char* spec, const char* conf) noexcept {
  return guarded([&] {
    npumem::capi::init_device_allocator(device, spec, conf);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_device_allocator(int device, npumem_allocator_t** out) noexcept {
  return guarded([&] {
    npumem_allocator_t*& result = npumem::capi::required(out, "out");
    result = nullptr;
    result = &npumem::capi::device_allocator(device);
    return NPUMEM_OK;
  });
}

void npumem_publish_after_fork() noexcept {
  npumem::capi::publish_after_fork();
}

}  // extern "C"
