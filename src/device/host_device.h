// Plain host memory for CPU users: one tier (reported as hbm) as large as the
// machine's RAM, page granularity, real pages, virtual-memory calls included. It is
// the virtual NPU configured that way, so it shares its accounting and checks.
#pragma once

#include "device/sim/sim_device.h"

namespace npumem {

class HostDevice final : public SimDevice {
 public:
  HostDevice();

  std::string name() const override { return "host"; }

  // The spec HostDevice runs on: no bandwidth model, no cache, no faults.
  static SimSpec host_spec();
};

}  // namespace npumem
