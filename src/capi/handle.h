// What an npumem_allocator_t* points at: an allocator, and whether it is one of the
// process-wide allocators behind npumem_malloc (those are never destroyed).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "npumem/allocator.h"
#include "npumem/hooks.h"
#include "npumem/npumem.h"

struct npumem_allocator {
  npumem_allocator(std::shared_ptr<npumem::Device> device, const npumem::Config& config,
                   bool process_wide_allocator)
      : allocator(std::move(device), config), process_wide(process_wide_allocator) {}

  // Made on the first npumem_add_hook / npumem_size_patterns_start (under
  // observers_mutex). Declared before the allocator, so they outlive its last event.
  std::mutex observers_mutex;
  std::shared_ptr<npumem::Hooks> hooks;
  std::unique_ptr<npumem::SizePatternAnalyser> size_patterns;

  npumem::Allocator allocator;
  const bool process_wide;
};

namespace npumem::capi {

// The allocator behind a handle; throws ArgumentError for NULL.
Allocator& allocator_of(npumem_allocator_t* handle);
// A copy of text in memory npumem_string_free releases.
char* c_string(const std::string& text);

}  // namespace npumem::capi
