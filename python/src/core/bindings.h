// The parts of the extension module npumem._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace npumem::python {

void bind_errors(pybind11::module_& module);   // bind_errors.cc
void bind_devices(pybind11::module_& module);  // bind_devices.cc
void bind_scopes(pybind11::module_& module);   // bind_scopes.cc: pools and memory tags
void bind_observe(pybind11::module_& module);  // bind_observe.cc: monitor, leaks, history
void bind_frames(pybind11::module_& module);   // bind_frames.cc: Python stacks per allocation
#ifdef NPUMEM_PYTHON_WITH_VIEWS
void bind_timeline(pybind11::module_& module);  // bind_timeline.cc: npumem viz's HTML page
void bind_plan(pybind11::module_& module);      // bind_plan.cc: npumem plan's plans
void bind_advise(pybind11::module_& module);    // bind_advise.cc: npumem advise buckets
#endif

}  // namespace npumem::python
