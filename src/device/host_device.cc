#include "host_device.h"

#include "device/os/os_memory.h"

namespace npumem {

HostDevice::HostDevice() : SimDevice(host_spec()) {}

SimSpec HostDevice::host_spec() {
  SimSpec spec;
  spec.hbm_bytes = os::physical_memory_bytes();
  spec.ddr_bytes = 0;
  spec.hbm_bandwidth = 0;
  spec.ddr_bandwidth = 0;
  spec.granularity = os::page_size();
  spec.cache_bytes = 0;
  spec.backing = Backing::host;
  spec.virtual_memory = true;
  return spec;
}

}  // namespace npumem
