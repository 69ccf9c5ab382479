// Python stack frames per live allocation, for npumem._record_memory_history: an
// observer that copies the Python stack (innermost frame first) of each allocation
// made by a thread holding the GIL, and forgets it when the block is freed. Threads
// without the GIL (PyTorch's autograd workers, C callers) allocate without frames.
//
// It runs under the allocator's lock and runs no Python code: it reads frames of the
// active call chain, which their interpreter frames keep alive, so releasing its own
// references never destroys an object.
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"
#include "device_registry.h"
#include "npumem/observer.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

struct PythonFrame {
  std::string filename;
  int line = 0;
  std::string name;
};

std::string utf8(PyObject* text) {
  const char* bytes = PyUnicode_AsUTF8(text);
  if (bytes == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return bytes;
}

// The calling thread's Python stack, innermost first; empty without the GIL.
std::vector<PythonFrame> current_python_stack() {
  std::vector<PythonFrame> stack;
  if (!Py_IsInitialized() || PyGILState_Check() == 0) return stack;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    stack.push_back({utf8(code->co_filename), PyFrame_GetLineNumber(frame), utf8(code->co_name)});
    Py_DECREF(code);
    PyFrameObject* caller = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = caller;
  }
  return stack;
}

class FrameObserver : public AllocatorObserver {
 public:
  void on_event(const Event& event) override {
    if (event.kind != EventKind::alloc && event.kind != EventKind::free) return;
    std::vector<PythonFrame> stack;
    if (event.kind == EventKind::alloc) stack = current_python_stack();
    std::lock_guard lock(mutex_);
    if (stack.empty()) {
      stacks_.erase(event.address);
    } else {
      stacks_[event.address] = std::move(stack);
    }
  }

  std::vector<PythonFrame> frames(std::uint64_t address) const {
    std::lock_guard lock(mutex_);
    const auto found = stacks_.find(address);
    return found == stacks_.end() ? std::vector<PythonFrame>{} : found->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::vector<PythonFrame>> stacks_;
};

// A FrameObserver attached to a device until stop() or its destruction.
class FrameRecorder {
 public:
  explicit FrameRecorder(DeviceEntry& device)
      : device_(device), observer_(std::make_shared<FrameObserver>()) {
    device.allocator->add_observer(observer_);
  }
  ~FrameRecorder() { stop(); }
  FrameRecorder(const FrameRecorder&) = delete;
  FrameRecorder& operator=(const FrameRecorder&) = delete;
  void stop() { device_.allocator->remove_observer(observer_); }
  py::list frames(std::uint64_t address) const {
    py::list result;
    for (const PythonFrame& frame : observer_->frames(address)) {
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
  std::shared_ptr<FrameObserver> observer_;
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
