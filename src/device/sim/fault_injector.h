// Injected device failures, so tests can prove the allocator survives a device that
// says out_of_memory at any moment: every Nth eligible call, or each one with a
// probability drawn from a seeded generator (the same seed fails the same calls).
#pragma once

#include <cstdint>

#include "sim_spec.h"

namespace npumem {

class FaultInjector {
 public:
  explicit FaultInjector(FaultSpec spec = {});

  // Whether this call of kind `op` fails. Counts only calls the spec applies to.
  bool should_fail(FaultOp op);

  const FaultSpec& spec() const { return spec_; }

 private:
  double next_uniform();  // in [0, 1)

  FaultSpec spec_;
  std::uint64_t eligible_calls_ = 0;
  std::uint64_t random_state_;
};

}  // namespace npumem
