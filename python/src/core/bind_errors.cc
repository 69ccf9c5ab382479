// npumem's C++ errors as Python exceptions under npumem.Error (a RuntimeError, like
// PyTorch's errors). OutOfMemoryError carries requested_bytes and pool.
#include <Python.h>

#include "bindings.h"
#include "npumem/errors.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

// Types live as long as the interpreter; the handles are never released.
struct ErrorTypes {
  py::handle error;
  py::handle out_of_memory;
  py::handle invalid_pointer;
  py::handle config;
  py::handle parse;
};

ErrorTypes& error_types() {
  static ErrorTypes types;
  return types;
}

py::handle new_type(py::module_& module, const char* name, py::handle base, const char* doc) {
  const std::string qualified = std::string("npumem.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::handle(type));
  return type;
}

void translate(std::exception_ptr thrown) {
  const ErrorTypes& types = error_types();
  try {
    std::rethrow_exception(thrown);
  } catch (const OutOfMemory& oom) {
    py::object instance = py::reinterpret_borrow<py::object>(types.out_of_memory)(oom.what());
    instance.attr("requested_bytes") = oom.requested_bytes();
    instance.attr("pool") = oom.pool();
    PyErr_SetObject(types.out_of_memory.ptr(), instance.ptr());
  } catch (const InvalidPointer& error) {
    PyErr_SetString(types.invalid_pointer.ptr(), error.what());
  } catch (const ConfigError& error) {
    PyErr_SetString(types.config.ptr(), error.what());
  } catch (const ParseError& error) {
    PyErr_SetString(types.parse.ptr(), error.what());
  } catch (const Error& error) {
    PyErr_SetString(types.error.ptr(), error.what());
  }
}

}  // namespace

void bind_errors(py::module_& module) {
  ErrorTypes& types = error_types();
  types.error = new_type(module, "Error", PyExc_RuntimeError, "Any error raised by npumem.");
  types.out_of_memory =
      new_type(module, "OutOfMemoryError", types.error,
               "No tier, cache release or pool quota could satisfy an allocation; the message "
               "explains why. Attributes: requested_bytes, pool.");
  types.invalid_pointer = new_type(module, "InvalidPointerError", types.error,
                                   "Freeing memory the allocator does not hold.");
  types.config = new_type(module, "ConfigError", types.error,
                          "A bad device spec, config string or option value.");
  types.parse = new_type(module, "ParseError", types.error, "Malformed input file.");
  py::register_exception_translator(translate);
}

}  // namespace npumem::python
