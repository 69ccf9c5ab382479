#include "python_stacks.h"

#include <Python.h>

namespace npumem::python {
namespace {

std::string utf8(PyObject* text) {
  const char* bytes = PyUnicode_AsUTF8(text);
  if (bytes == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return bytes;
}

bool interpreter_running() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() != 0 && Py_IsFinalizing() == 0;
#else
  return Py_IsInitialized() != 0 && _Py_IsFinalizing() == 0;
#endif
}

}  // namespace

// Frames of the active call chain stay alive while they run (their interpreter frames
// hold them), so dropping the references taken here destroys nothing.
std::vector<PythonFrame> PythonStacks::capture() {
  std::vector<PythonFrame> stack;
  if (!interpreter_running()) return stack;
  const PyGILState_STATE gil = PyGILState_Ensure();
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
  PyGILState_Release(gil);
  return stack;
}

void PythonStacks::remember(std::uint64_t address, std::vector<PythonFrame> stack) {
  std::lock_guard lock(mutex_);
  stacks_[address] = std::move(stack);
}

std::vector<PythonFrame> PythonStacks::frames(std::uint64_t address) const {
  std::lock_guard lock(mutex_);
  const auto found = stacks_.find(address);
  return found == stacks_.end() ? std::vector<PythonFrame>{} : found->second;
}

// Under the allocator's lock: only forgets. A stack taken for an allocation is
// remembered after this allocation event.
void PythonStacks::on_event(const Event& event) {
  if (event.kind != EventKind::alloc && event.kind != EventKind::free) return;
  std::lock_guard lock(mutex_);
  stacks_.erase(event.address);
}

}  // namespace npumem::python
