// What an npumem_allocator_t* points at: an allocator, and whether it is one of the
// process-wide allocators behind npumem_malloc (those are never destroyed).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "npumem/allocator.h"
#include "npumem/hooks.h"
#include "npumem/leak_detector.h"
#include "npumem/npumem.h"

struct npumem_allocator {
  npumem_allocator(std::shared_ptr<npumem::Device> device, const npumem::Config& config,
                   bool process_wide_allocator)
      : process_wide(process_wide_allocator) {
    allocator.emplace(std::move(device), config);
  }

  // Made on the first npumem_add_hook / npumem_size_patterns_start /
  // npumem_leak_check_start (under observers_mutex). Declared before the allocator, so
  // they outlive its last event.
  std::mutex observers_mutex;
  std::shared_ptr<npumem::Hooks> hooks;
  std::unique_ptr<npumem::SizePatternAnalyser> size_patterns;
  std::shared_ptr<npumem::LeakDetector> leak_detector;

  // Empty once npumem_allocator_destroy has run: destroy ends the allocator but keeps
  // this small handle, so that a call on it afterwards is an INVALID_ARGUMENT rather
  // than a read of freed memory.
  std::optional<npumem::Allocator> allocator;
  const bool process_wide;
};

namespace npumem::capi {

// The allocator behind a handle; throws ArgumentError for NULL or a destroyed handle.
Allocator& allocator_of(npumem_allocator_t* handle);
// The handle itself, checked as allocator_of checks it.
inline npumem_allocator& handle_of(npumem_allocator_t* handle) {
  allocator_of(handle);
  return *handle;
}
// A copy of text in memory npumem_string_free releases.
char* c_string(const std::string& text);

}  // namespace npumem::capi
