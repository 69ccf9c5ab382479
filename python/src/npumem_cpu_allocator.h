// The c10 CPU allocator that serves PyTorch's CPU tensors from an npumem device
// (one with host-accessible memory), installed through c10::SetCPUAllocator.
#pragma once

#include <c10/core/Allocator.h>

#include "allocator_bridge.h"

namespace npumem::python {

class NpumemCpuAllocator final : public c10::Allocator {
 public:
  // The bridge must outlive every tensor: npumem's registry keeps it for the process.
  explicit NpumemCpuAllocator(const AllocatorBridge& bridge);

  // Zero bytes give a null pointer without touching npumem, as PyTorch's default CPU
  // allocator does. Throws c10::OutOfMemoryError (torch.cuda.OutOfMemoryError, a
  // RuntimeError, in Python) with npumem's explanation.
  c10::DataPtr allocate(std::size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;

  const AllocatorBridge& bridge() const { return bridge_; }

 private:
  const AllocatorBridge& bridge_;
};

}  // namespace npumem::python
