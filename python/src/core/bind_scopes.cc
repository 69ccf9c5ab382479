// Thread-local scopes for Python's `with` blocks: npumem._core.PoolScope routes this
// thread's allocations to a pool; set_memory_tag names the blocks this thread allocates.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "allocator_bridge.h"
#include "bindings.h"
#include "device_registry.h"
#include "npumem/errors.h"
#include "npumem/observer.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

// A C++ PoolScope entered and exited explicitly. PoolScope restores the scope it
// replaced, so scopes must close in reverse order on the thread that opened them.
class PythonPoolScope {
 public:
  PythonPoolScope(DeviceEntry& device, std::string pool)
      : device_(device), pool_(std::move(pool)) {}
  // A scope dropped while active (no `with`) closes like exit() would.
  ~PythonPoolScope() { std::erase(open_scopes(), this); }
  PythonPoolScope(const PythonPoolScope&) = delete;
  PythonPoolScope& operator=(const PythonPoolScope&) = delete;

  void enter() {
    if (scope_) throw Error("pool scope '" + pool_ + "' is active already; a scope enters once");
    scope_.emplace(*device_.allocator, pool_);
    thread_ = std::this_thread::get_id();
    open_scopes().push_back(this);
  }

  void exit() {
    if (!scope_) throw Error("pool scope '" + pool_ + "' is not active");
    if (thread_ != std::this_thread::get_id()) {
      throw Error("pool scope '" + pool_ + "' must exit on the thread that entered it");
    }
    if (open_scopes().back() != this) {
      throw Error("pool scope '" + pool_ + "' exits before a scope entered after it");
    }
    open_scopes().pop_back();
    scope_.reset();
  }

  const std::string& pool() const { return pool_; }

 private:
  static std::vector<const PythonPoolScope*>& open_scopes() {
    thread_local std::vector<const PythonPoolScope*> scopes;
    return scopes;
  }

  DeviceEntry& device_;
  std::string pool_;
  std::optional<PoolScope> scope_;
  std::thread::id thread_;
};

void current_pool(std::string* name, std::uint64_t* quota_bytes) {
  *name = PoolScope::current_pool();
  *quota_bytes = PoolScope::current_pool_quota();
}

void current_tag(std::string* tag) {
  *tag = memory_tag();
}

ScopeBridge scope_bridge{kScopeBridgeVersion, &current_pool, &current_tag};

}  // namespace

void bind_scopes(py::module_& module) {
  py::class_<PythonPoolScope>(module, "PoolScope",
                              "Routes this thread's allocations on a device to a pool")
      .def(py::init<DeviceEntry&, std::string>(), py::arg("device"), py::arg("pool"),
           py::keep_alive<1, 2>())
      .def_property_readonly("pool", &PythonPoolScope::pool)
      .def("enter", &PythonPoolScope::enter)
      .def("exit", &PythonPoolScope::exit);

  module.def(
      "scope_bridge",
      [] { return py::capsule(static_cast<void*>(&scope_bridge), kScopeBridgeCapsule); },
      "This thread's scopes as npumem._torch reads them (its recordings' `p` and `t` lines)");
  module.def(
      "set_memory_tag", [](const std::string& tag) { set_memory_tag(tag); }, py::arg("tag"),
      "Tags the blocks this thread allocates from now on (empty: no tag)");
  module.def(
      "memory_tag", [] { return std::string(memory_tag()); }, "This thread's memory tag");
}

}  // namespace npumem::python
