// FrameRecorder: records the Python stack of each allocation a device makes for
// Python (npumem.caching_allocator_alloc, PyTorch tensors through npumem.torch) until
// stop(), for npumem._record_memory_history.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>

#include "bindings.h"
#include "device_registry.h"
#include "python_stacks.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

class FrameRecorder {
 public:
  explicit FrameRecorder(DeviceEntry& device)
      : device_(device), stacks_(std::make_shared<PythonStacks>()) {
    device.allocator->add_observer(stacks_);
    record_stacks(device, stacks_);
  }
  ~FrameRecorder() { stop(); }
  FrameRecorder(const FrameRecorder&) = delete;
  FrameRecorder& operator=(const FrameRecorder&) = delete;
  void stop() {
    stop_recording_stacks(device_, stacks_);
    device_.allocator->remove_observer(stacks_);
  }
  py::list frames(std::uint64_t address) const {
    py::list result;
    for (const PythonFrame& frame : stacks_->frames(address)) {
      py::dict entry;
      entry["filename"] = frame.filename;
      entry["line"] = frame.line;
      entry["name"] = frame.name;
      result.append(entry);
    }
    return result;
  }

 private:
  DeviceEntry& device_;
  std::shared_ptr<PythonStacks> stacks_;
};

}  // namespace

void bind_frames(py::module_& module) {
  py::class_<FrameRecorder>(module, "FrameRecorder",
                            "The Python stack of each live allocation of a device")
      .def(py::init<DeviceEntry&>(), py::arg("device"), py::keep_alive<1, 2>())
      .def("stop", &FrameRecorder::stop)
      .def("frames", &FrameRecorder::frames, py::arg("address"),
           "The allocating stack of a live block, innermost first, as dicts with filename, "
           "line and name; [] when none was recorded");
}

}  // namespace npumem::python
