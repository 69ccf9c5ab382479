// npumem._core: the C++ allocator for Python. The package npumem wraps it in the
// torch.cuda.memory-style API.
#include "bindings.h"

PYBIND11_MODULE(_core, module) {
  module.doc() =
      "npumem's C++ allocator: devices, statistics, snapshots, pools, memory tags, observers";
  npumem::python::bind_errors(module);
  npumem::python::bind_devices(module);
  npumem::python::bind_scopes(module);
  npumem::python::bind_observe(module);
  npumem::python::bind_frames(module);
#ifdef NPUMEM_PYTHON_WITH_VIEWS
  npumem::python::bind_timeline(module);
  npumem::python::bind_plan(module);
  npumem::python::bind_advise(module);
#endif
}
