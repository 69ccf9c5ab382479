// npumem through its C++ API: the tiered allocator on a virtual NPU with 1 GiB of HBM
// and 1 GiB of DDR, a spill to DDR, and the errors a caller catches.
#include <npumem/allocator.h>
#include <npumem/errors.h>
#include <npumem/units.h>

#include <iostream>

int main() {
  using npumem::GiB;
  using npumem::MiB;
  npumem::Allocator allocator(npumem::make_device("sim:hbm=1GiB,ddr=1GiB"));

  void* weights = allocator.allocate(900 * MiB);
  void* activations = allocator.allocate(300 * MiB);  // HBM is full: served by DDR
  const npumem::Stats stats = allocator.stats();
  std::cout << "allocated " << npumem::format_bytes(stats.allocated_bytes.all.current) << ", "
            << "spills " << stats.num_spills << ", activations on "
            << npumem::tier_name(allocator.tier_of(activations)) << "\n";

  try {
    allocator.allocate(4 * GiB);
    return 1;
  } catch (const npumem::OutOfMemory& error) {
    std::cout << "refused " << npumem::format_bytes(error.requested_bytes()) << "\n";
  }

  allocator.deallocate(activations);
  allocator.deallocate(weights);
  try {
    allocator.deallocate(weights);
    return 1;
  } catch (const npumem::InvalidPointer&) {
    std::cout << "double free caught\n";
  }
  std::cout << "cpp_consumer: ok\n";
  return 0;
}
