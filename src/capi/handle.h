// What an npumem_allocator_t* points at: an allocator, and whether it is one of the
// process-wide allocators behind npumem_malloc (those are never destroyed).
#pragma once

#include <memory>

#include "npumem/allocator.h"
#include "npumem/npumem.h"

struct npumem_allocator {
  npumem_allocator(std::shared_ptr<npumem::Device> device, const npumem::Config& config,
                   bool process_wide_allocator)
      : allocator(std::move(device), config), process_wide(process_wide_allocator) {}

  npumem::Allocator allocator;
  const bool process_wide;
};

namespace npumem::capi {

// The allocator behind a handle; throws ArgumentError for NULL.
Allocator& allocator_of(npumem_allocator_t* handle);

}  // namespace npumem::capi
