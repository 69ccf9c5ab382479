// The shapes of a trace's iterations, for `npumem advise buckets`: a trace has no
// tensor shapes, so an iteration's shape is what its allocations show. Its working set
// is the tensors it makes that are freed before the next iteration ends (in the last
// iteration, also those never freed); tensors that outlive that (weights, optimizer
// state, what comes before the first `i`, named pools) are outside every working set.
// Iterations whose working sets allocate and free in the same order (request by
// request) form a family and share lifetimes; within a family, a shape is one
// sequence of request sizes. An iteration whose working set is empty (what a capture
// marked at optimizer.step() has after its last step) has no shape: nothing in it to
// pad or plan. The first or last iteration alone in its family is set aside (below).
// A tensor of the iteration before that an iteration frees (an output kept until the
// next batch, a cache it replaces) is live at its start: the iteration carries it in,
// and its plan holds it from op 0 to the op before that free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "npumem/plan.h"
#include "trace.h"

namespace npumem::cli {

struct IterationShape {
  std::vector<std::uint64_t> sizes;     // requested bytes of the working set, in order
  std::vector<std::size_t> iterations;  // the trace's iterations (0: after the first i)
  std::uint64_t requested_bytes = 0;    // sum of sizes
  // The tensors carried in, in the order of their frees: from op 0 to the op before
  // each free, of the most bytes any iteration of this shape carried there. The first
  // iteration carries nothing; a plan of the shape holds what the others carry.
  std::vector<plan::TensorLifetime> carried;
};

struct ShapeFamily {
  // Op k is the k-th allocation or free of the working set; a tensor the next
  // iteration frees lives to the last op (as `plan memory --trace --iteration` has it).
  // Bytes are 0: each shape gives its own.
  std::vector<plan::TensorLifetime> lifetimes;
  std::vector<IterationShape> shapes;
};

// The family's lifetimes with `sizes` for its requests, then the tensors `carried` in.
std::vector<plan::TensorLifetime> with_sizes(const ShapeFamily& family,
                                             const std::vector<std::uint64_t>& sizes,
                                             const std::vector<plan::TensorLifetime>& carried);

// Makes `into` hold each tensor of `from` too: tensors freed at the same op are matched
// in order, and a match keeps the larger size.
void merge_carried(std::vector<plan::TensorLifetime>& into,
                   const std::vector<plan::TensorLifetime>& from);

struct IterationShapes {
  std::size_t iterations = 0;         // every iteration of the trace
  std::size_t empty_iterations = 0;   // of those, the ones with no shape (empty working set)
  std::vector<ShapeFamily> families;  // in the order of their first iteration
  // The first and the last iteration, when each allocates in an order no other does
  // (the first making the optimizer state, the last the script's end) and a family of
  // several iterations exists: left out of the families, as bucket advice for one
  // iteration.
  std::vector<std::size_t> set_aside;
  // Peak of the bytes live outside the working sets from the first `i` on.
  std::uint64_t outside_peak_bytes = 0;
  // Peak of the bytes live before the first `i` (a capture's first step, the weights):
  // a plan serves nothing there, so no planned total is below it.
  std::uint64_t before_iterations_peak_bytes = 0;
};

// Throws ParseError naming the trace (at its last line) when it has no `i` line.
IterationShapes iteration_shapes(const Trace& trace);

}  // namespace npumem::cli
