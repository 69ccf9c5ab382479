// Tensor lifetimes of an ONNX model, for `npumem plan memory --onnx`. The Python module
// npumem.onnx_lifetimes reads the model (onnx's shape inference; it needs python3-onnx)
// and applies the lifetime rules (docs/PLANNING.md); this runs it and reads its JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "npumem/plan.h"

namespace npumem::cli {

// Python, npumem's package or onnx could not run: not the model's fault (exit 1).
class OnnxToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OnnxLifetimes {
  std::vector<plan::TensorLifetime> tensors;  // planned: the nodes' outputs, in the order made
  std::size_t weight_tensors = 0;             // initializers, Constant and folded outputs: lasting
  std::uint64_t weight_bytes = 0;
  std::size_t input_tensors = 0;  // graph inputs: the caller's buffers, not planned
  std::uint64_t input_bytes = 0;
};

// Runs `PYTHON -m npumem.onnx_lifetimes --json MODEL [--dim D]...`. PYTHON is
// $NPUMEM_PYTHON, else the interpreter the build was configured with (NPUMEM_PYTHON);
// the package assembled in the build tree, when there is one, goes first on PYTHONPATH,
// else the interpreter must find an installed npumem. dims: `NAME=SIZE` or
// `INPUT:AXIS=SIZE`, sizes of symbolic input dimensions. Throws Error for a bad model
// and OnnxToolError when Python or the package cannot run.
OnnxLifetimes onnx_lifetimes(const std::string& model_path, const std::vector<std::string>& dims);

}  // namespace npumem::cli
