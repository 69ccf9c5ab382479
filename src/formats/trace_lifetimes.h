// Tensor lifetimes from an allocation trace, for `npumem plan memory --trace`: op k is
// the trace's k-th `a` or `f` event (counted from the start of the stretch).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "npumem/plan.h"
#include "trace.h"

namespace npumem::cli {

struct TraceLifetimes {
  std::vector<plan::TensorLifetime> tensors;  // in allocation order
  std::size_t ops = 0;                        // a and f events in the stretch
  // Iteration only: tensors made before it and still live in it (weights, state); they
  // are not planned.
  std::size_t live_before = 0;
  std::size_t live_after = 0;  // tensors still live at the end: they last to the last op
};

// The lifetimes of every allocation of the trace, or of those made in one iteration
// (0 is the stretch after the first `i` line). Throws ConfigError when the trace has no
// such iteration.
TraceLifetimes trace_lifetimes(const Trace& trace, std::optional<std::size_t> iteration);

}  // namespace npumem::cli
