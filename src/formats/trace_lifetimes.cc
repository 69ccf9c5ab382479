#include "trace_lifetimes.h"

#include <algorithm>
#include <string>

#include "npumem/errors.h"

namespace npumem::cli {

TraceLifetimes trace_lifetimes(const Trace& trace, std::optional<std::size_t> iteration) {
  if (iteration && *iteration >= trace.iterations) {
    throw ConfigError(trace.source + ": no iteration " + std::to_string(*iteration) +
                      " (the trace has " + std::to_string(trace.iterations) + " `i` line" +
                      (trace.iterations == 1 ? "" : "s") + "; iterations count from 0)");
  }
  constexpr std::size_t kNone = ~std::size_t{0};
  std::vector<std::size_t> tensor_of(trace.allocations, kNone);  // by slot
  std::vector<bool> live(trace.allocations, false);
  TraceLifetimes out;
  std::size_t marks = 0;
  // With an iteration, the stretch runs from its `i` line to the next.
  bool inside = !iteration.has_value();
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::iteration) {
      ++marks;
      if (iteration) {
        if (inside) break;
        inside = marks == *iteration + 1;
        if (inside)
          out.live_before = static_cast<std::size_t>(std::count(live.begin(), live.end(), true));
      }
      continue;
    }
    if (event.op == TraceOp::alloc) live[event.index] = true;
    if (event.op == TraceOp::free) live[event.index] = false;
    if (!inside || (event.op != TraceOp::alloc && event.op != TraceOp::free)) continue;
    if (event.op == TraceOp::alloc) {
      tensor_of[event.index] = out.tensors.size();
      out.tensors.push_back({event.bytes, out.ops, out.ops});
    } else if (tensor_of[event.index] != kNone) {
      out.tensors[tensor_of[event.index]].last_op = out.ops;
    }
    ++out.ops;
  }
  const std::uint64_t last_op = out.ops == 0 ? 0 : out.ops - 1;
  for (std::size_t slot = 0; slot < trace.allocations; ++slot) {
    if (live[slot] && tensor_of[slot] != kNone) {
      out.tensors[tensor_of[slot]].last_op = last_op;
      ++out.live_after;
    }
  }
  return out;
}

}  // namespace npumem::cli
