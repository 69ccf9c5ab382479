// What an npumem_allocator_t* points at: an allocator, and whether it is one of the
// process-wide allocators behind npumem_malloc (those are never destroyed).
#pragma once

#include <memory>
#include <optional>

#include "npumem/allocator.h"
#include "npumem/npumem.h"

struct npumem_allocator {
  npumem_allocator(std::shared_ptr<npumem::Device> device, const npumem::Config& config,
                   bool process_wide_allocator)
      : process_wide(process_wide_allocator) {
    allocator.emplace(std::move(device), config);
  }

  // Empty once npumem_allocator_destroy has run: destroy ends the allocator but keeps
  // this small handle, so that a call on it afterwards is an INVALID_ARGUMENT rather
  // than a read of freed memory.
  std::optional<npumem::Allocator> allocator;
  const bool process_wide;
};

namespace npumem::capi {

// The allocator behind a handle; throws ArgumentError for NULL or a destroyed handle.
Allocator& allocator_of(npumem_allocator_t* handle);

}  // namespace npumem::capi
