// npumem._torch: puts npumem (or a recorder) behind PyTorch's CPU tensors through
// c10::SetCPUAllocator, keeping the allocator it replaced to put back.
#include <c10/core/CPUAllocator.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "allocator_bridge.h"
#include "npumem_cpu_allocator.h"
#include "recording_allocator.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

// Above the default CPU allocator's registration (0), so SetCPUAllocator accepts
// ours; restoring uses the same priority.
constexpr std::uint8_t kPriority = 100;

struct Installation {
  NpumemCpuAllocator* allocator = nullptr;  // created once, never destroyed
  c10::Allocator* previous = nullptr;       // what install() replaced
};

Installation& installation() {
  static Installation state;
  return state;
}

const AllocatorBridge& bridge_from(const py::capsule& capsule) {
  if (capsule.name() == nullptr || std::string(capsule.name()) != kAllocatorBridgeCapsule) {
    throw std::invalid_argument("expected the capsule of npumem._core.Device.bridge()");
  }
  const auto* bridge = capsule.get_pointer<AllocatorBridge>();
  if (bridge->version != kAllocatorBridgeVersion) {
    throw std::runtime_error("npumem._core and npumem._torch come from different builds");
  }
  return *bridge;
}

// npumem serves the CPU tensors: it is the CPU allocator, or the one a recording wraps.
bool installed() {
  const c10::Allocator* ours = installation().allocator;
  if (ours == nullptr) return false;
  const RecordingAllocator& recorder = RecordingAllocator::instance();
  const c10::Allocator* current = c10::GetCPUAllocator();
  return current == ours || (current == &recorder && recorder.inner() == ours);
}

// Serves the device's tensors too and makes it the default device.
void install(const py::capsule& capsule) {
  const AllocatorBridge& bridge = bridge_from(capsule);
  Installation& state = installation();
  if (RecordingAllocator::instance().recording()) {
    throw std::runtime_error(
        "npumem cannot be installed while npumem.torch.record() records PyTorch's own "
        "allocator (as `python3 -m npumem.torch capture` does): capture a script that does "
        "not install npumem, or run this one with `python3 -m npumem.torch run`");
  }
  NpumemCpuAllocator::serve(bridge);
  NpumemCpuAllocator::set_default(bridge);
  if (installed()) return;
  if (state.allocator == nullptr) state.allocator = new NpumemCpuAllocator();
  state.previous = c10::GetCPUAllocator();
  c10::SetCPUAllocator(state.allocator, kPriority);
}

// Routes this thread's new tensors to a served device; None: the default device.
void route(const py::object& capsule) {
  if (capsule.is_none()) {
    NpumemCpuAllocator::route(nullptr);
    return;
  }
  const AllocatorBridge& bridge = bridge_from(capsule.cast<py::capsule>());
  if (!NpumemCpuAllocator::serves(bridge)) {
    throw std::runtime_error("this npumem device does not serve PyTorch's tensors; install it");
  }
  NpumemCpuAllocator::route(&bridge);
}

void uninstall() {
  if (RecordingAllocator::instance().recording()) {
    throw std::runtime_error("stop the allocation recording before uninstalling npumem");
  }
  if (!installed()) return;
  c10::SetCPUAllocator(installation().previous, kPriority);
}

void start_recording(const py::capsule& scopes) {
  if (scopes.name() == nullptr || std::string(scopes.name()) != kScopeBridgeCapsule) {
    throw std::invalid_argument("expected the capsule of npumem._core.scope_bridge()");
  }
  const auto* bridge = scopes.get_pointer<ScopeBridge>();
  if (bridge->version != kScopeBridgeVersion) {
    throw std::runtime_error("npumem._core and npumem._torch come from different builds");
  }
  RecordingAllocator& recorder = RecordingAllocator::instance();
  recorder.start(c10::GetCPUAllocator(), *bridge);
  c10::SetCPUAllocator(&recorder, kPriority);
}

using Events = std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>>;

// The events as (kind, id, bytes), kind "a", "f", "i", "p", "r" or "t" (id: the index of
// its pool or tag among their names; a "p" event's bytes: the pool's quota, 0 for none),
// the pool names and the tags.
std::tuple<Events, std::vector<std::string>, std::vector<std::string>> stop_recording() {
  RecordingAllocator& recorder = RecordingAllocator::instance();
  Recorded recorded = recorder.stop();
  c10::SetCPUAllocator(recorder.inner(), kPriority);
  Events events;
  events.reserve(recorded.events.size());
  for (const RecordedEvent& event : recorded.events) {
    events.emplace_back(std::string(1, event.kind), event.id, event.bytes);
  }
  return {std::move(events), std::move(recorded.pools), std::move(recorded.tags)};
}

}  // namespace
}  // namespace npumem::python

PYBIND11_MODULE(_torch, module) {
  using namespace npumem::python;
  module.doc() = "PyTorch's CPU allocator hook for npumem (c10::SetCPUAllocator)";
  module.def("install", &install, py::arg("bridge"),
             "Serves PyTorch's CPU tensors from the npumem device whose bridge is given "
             "(the default device from now on; earlier devices stay served)");
  module.def("uninstall", &uninstall, "Puts back the CPU allocator install() replaced");
  module.def("route", &route, py::arg("bridge"),
             "Routes this thread's new CPU tensors to a served device (None: the default)");
  module.def("installed", &installed, "Whether npumem serves PyTorch's CPU tensors now");
  module.def("start_recording", &start_recording, py::arg("scopes"),
             "Records every CPU allocation and free from now on, over the current allocator, "
             "and the pool of each (scopes: npumem._core.scope_bridge())");
  module.def("stop_recording", &stop_recording,
             "Stops recording; returns the events as (kind, id, bytes) tuples and the names of "
             "the pools and tags 'p' and 't' events index");
  module.def("recording", [] { return RecordingAllocator::instance().recording(); });
  module.def(
      "live_in_pool",
      [](const std::string& name) { return RecordingAllocator::instance().live_in_pool(name); },
      py::arg("name"),
      "The recording's allocations in pool `name` still live: (count, requested bytes)");
  module.def(
      "record_pool_removal",
      [](const std::string& name) { RecordingAllocator::instance().record_pool_removal(name); },
      py::arg("name"), "Records the removal of pool `name` (an `r` line) when recording");
  module.def(
      "record_iteration",
      [](std::optional<std::uint64_t> key) { RecordingAllocator::instance().mark_iteration(key); },
      py::arg("key") = py::none(),
      "Records an iteration boundary (an `i` line, `i <key>` with a key) when recording");
}
