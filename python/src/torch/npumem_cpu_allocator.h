// The c10 CPU allocator that serves PyTorch's CPU tensors from npumem devices (with
// host-accessible memory), installed through c10::SetCPUAllocator. Several devices may
// serve one process: each thread allocates on the device it is routed to (the default
// one otherwise), and a free finds its device by the address.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>

#include "allocator_bridge.h"

namespace npumem::python {

class NpumemCpuAllocator final : public c10::Allocator {
 public:
  // Most devices one process may serve.
  static constexpr std::size_t kMaxDevices = 64;

  // Adds a device whose tensors this allocator serves (nothing when it serves it
  // already). The bridge must outlive every tensor: npumem's registry keeps it for the
  // process. Throws std::length_error past kMaxDevices.
  static void serve(const AllocatorBridge& bridge);
  static bool serves(const AllocatorBridge& bridge);
  // The device of threads not routed elsewhere; it must be served.
  static void set_default(const AllocatorBridge& bridge);
  static const AllocatorBridge* default_device();
  // Routes this thread's allocations to a served device (nullptr: the default one);
  // returns the previous routing.
  static const AllocatorBridge* route(const AllocatorBridge* bridge);

  // Zero bytes give a null pointer without touching npumem, as PyTorch's default CPU
  // allocator does. Throws c10::OutOfMemoryError (torch.cuda.OutOfMemoryError, a
  // RuntimeError, in Python) with npumem's explanation.
  c10::DataPtr allocate(std::size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;
};

}  // namespace npumem::python
