// The observe layer for Python: Monitor (labelled snapshots and their report),
// LeakDetector, history recording, memory_summary, the planned strategy's report, and the snapshot
// as JSON and as a Chrome trace. Each object works on one device of the registry.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>

#include "bindings.h"
#include "device_registry.h"
#include "npumem/history.h"
#include "npumem/hooks.h"
#include "npumem/leak_detector.h"
#include "npumem/monitor.h"
#include "npumem/planned_report.h"
#include "npumem/snapshot.h"
#include "npumem/stats_page.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

py::dict usage_dict(const TierUsage& usage) {
  py::dict result;
  result["allocated_bytes"] = usage.allocated_bytes;
  result["reserved_bytes"] = usage.reserved_bytes;
  result["peak_allocated_bytes"] = usage.peak_allocated_bytes;
  result["peak_reserved_bytes"] = usage.peak_reserved_bytes;
  return result;
}

py::dict labelled_dict(const LabelledSnapshot& snapshot) {
  py::dict result = usage_dict(snapshot.total);
  result["label"] = snapshot.label;
  result["time"] = std::chrono::duration<double>(snapshot.time.time_since_epoch()).count();
  py::dict tiers;
  for (const Tier tier : kAllTiers) {
    tiers[py::str(std::string(tier_name(tier)))] =
        usage_dict(snapshot.tiers[static_cast<std::size_t>(tier)]);
  }
  result["tiers"] = tiers;
  return result;
}

py::dict leak_group_dict(const LeakGroup& group) {
  py::dict result;
  result["tag"] = group.tag;
  result["pool"] = group.pool;
  result["frames"] = group.frames;
  result["site"] = group.site;
  result["count"] = group.count;
  result["bytes"] = group.bytes;
  result["requested_bytes"] = group.requested_bytes;
  result["iterations"] = group.iterations;
  result["judged_iterations"] = group.judged_iterations;
  result["judged_bytes"] = group.judged_bytes;
  result["first_iteration"] = group.first_iteration;
  result["last_iteration"] = group.last_iteration;
  result["recurring"] = group.recurring;
  return result;
}

// Every process on the stats pages (npumem smi's source): pid, name, and per device
// its name and allocated / reserved bytes over the tiers.
py::list stats_pages_list() {
  py::list processes;
  for (const ProcessStats& process : read_stats_pages()) {
    py::list devices;
    for (const PublishedDevice& device : process.devices) {
      std::uint64_t allocated = 0;
      std::uint64_t reserved = 0;
      for (const PublishedTier& tier : device.tiers) {
        allocated += tier.allocated_bytes;
        reserved += tier.reserved_bytes;
      }
      py::dict entry;
      entry["name"] = device.name;
      entry["allocated_bytes"] = allocated;
      entry["reserved_bytes"] = reserved;
      devices.append(entry);
    }
    py::dict entry;
    entry["pid"] = process.pid;
    entry["name"] = process.process_name;
    entry["devices"] = devices;
    processes.append(entry);
  }
  return processes;
}

py::dict leak_report_dict(const LeakReport& report) {
  py::dict result;
  result["iterations"] = report.iterations;
  result["warmup_iterations"] = report.warmup_iterations;
  result["judged_iterations"] = report.judged_iterations;
  result["leaked_bytes"] = report.leaked_bytes;
  result["baseline_bytes"] = report.baseline_bytes;
  result["final_bytes"] = report.final_bytes;
  result["growth"] = report.growth;
  result["threshold"] = report.threshold;
  result["leaking"] = report.leaking;
  result["samples"] = report.samples;
  py::list survivors;
  for (const LeakGroup& group : report.survivors) survivors.append(leak_group_dict(group));
  result["survivors"] = survivors;
  result["text"] = to_string(report);
  return result;
}

// A Monitor of a registry device (which outlives it).
class PythonMonitor {
 public:
  explicit PythonMonitor(DeviceEntry& device) : monitor_(*device.allocator) {}
  py::dict snapshot(std::string label) {
    return labelled_dict(monitor_.snapshot(std::move(label)));
  }
  py::list snapshots() const {
    py::list result;
    for (const LabelledSnapshot& snapshot : monitor_.snapshots())
      result.append(labelled_dict(snapshot));
    return result;
  }
  std::string report() const { return monitor_.report(); }
  std::string empty_cache() { return to_string(monitor_.empty_cache()); }

 private:
  Monitor monitor_;
};

// The innermost of `frames` outside `libraries` (path prefixes: npumem's, PyTorch's) as
// "file:line in name": the caller's line that made a block; "" when none is.
// `in_library` remembers each file's answer (a report looks at every survivor).
std::string caller_line(const std::vector<PythonFrame>& frames,
                        const std::vector<std::string>& libraries,
                        std::unordered_map<std::string, bool>& in_library) {
  for (const PythonFrame& frame : frames) {
    const auto [known, added] = in_library.try_emplace(frame.filename, false);
    if (added) {
      std::error_code error;
      const std::string path = std::filesystem::absolute(frame.filename, error).string();
      known->second = std::any_of(libraries.begin(), libraries.end(), [&](const auto& prefix) {
        return path.compare(0, prefix.size(), prefix) == 0;
      });
    }
    if (!known->second) {
      return frame.filename + ":" + std::to_string(frame.line) + " in " + frame.name;
    }
  }
  return {};
}

// A LeakDetector attached to a device until detach() or its destruction; with
// `python_lines`, each allocation's Python stack is taken, and the report splits groups
// by the caller's line that made them (two leaks outside any module were one
// "untagged" group).
class PythonLeakDetector {
 public:
  // `libraries`: where npumem's and PyTorch's Python code lies (caller_line).
  PythonLeakDetector(DeviceEntry& device, double threshold, bool backtraces,
                     std::size_t warmup_iterations, bool python_lines,
                     std::vector<std::string> libraries)
      : device_(device), libraries_(std::move(libraries)) {
    LeakOptions options{
        .threshold = threshold, .backtraces = backtraces, .warmup_iterations = warmup_iterations};
    if (python_lines) {
      stacks_ = std::make_shared<PythonStacks>();
      // Under the detector's lock, which guards in_library_ too.
      options.site_of = [this](std::uint64_t address) {
        return caller_line(stacks_->frames(address), libraries_, in_library_);
      };
    }
    detector_ = LeakDetector::attach(*device.allocator, std::move(options));
    if (stacks_) {
      // After the detector: a free reaches it first, while the stack is still kept.
      device.allocator->add_observer(stacks_);
      record_stacks(device, stacks_);
    }
  }
  ~PythonLeakDetector() { detach(); }
  PythonLeakDetector(const PythonLeakDetector&) = delete;
  PythonLeakDetector& operator=(const PythonLeakDetector&) = delete;
  void mark_baseline() { detector_->mark_baseline(*device_.allocator); }
  void tick() { detector_->tick(); }
  py::dict report() const { return leak_report_dict(detector_->report()); }
  // Removing an observer that is not attached changes nothing.
  void detach() {
    device_.allocator->remove_observer(detector_);
    if (stacks_) {
      stop_recording_stacks(device_, stacks_);
      device_.allocator->remove_observer(stacks_);
    }
  }

 private:
  DeviceEntry& device_;
  std::shared_ptr<PythonStacks> stacks_;  // with python_lines
  const std::vector<std::string> libraries_;
  std::unordered_map<std::string, bool> in_library_;  // caller_line's answers by file
  std::shared_ptr<LeakDetector> detector_;
};

// A HistoryRecorder attached to a device until stop() or its destruction.
class PythonHistory {
 public:
  PythonHistory(DeviceEntry& device, std::size_t max_entries, bool backtraces)
      : device_(device), recorder_(record_history(*device.allocator, {max_entries, backtraces})) {}
  ~PythonHistory() { stop(); }
  PythonHistory(const PythonHistory&) = delete;
  PythonHistory& operator=(const PythonHistory&) = delete;
  void stop() { device_.allocator->remove_observer(recorder_); }
  std::uint64_t recorded() const { return recorder_->recorded(); }
  std::uint64_t dropped() const { return recorder_->dropped(); }
  const HistoryRecorder& recorder() const { return *recorder_; }

 private:
  DeviceEntry& device_;
  std::shared_ptr<HistoryRecorder> recorder_;
};

// A SizePatternAnalyser fed by hooks on a device (ticking at its iteration marks)
// until stop() or its destruction. No Python code runs under the allocator's lock.
class PythonSizePatterns {
 public:
  explicit PythonSizePatterns(DeviceEntry& device)
      : device_(device), hooks_(std::make_shared<Hooks>()) {
    analyser_.install(*hooks_);
    hooks_->add({EventKind::iteration}, [this](const Event&) { analyser_.tick(); });
    device.allocator->add_observer(hooks_);
  }
  ~PythonSizePatterns() { stop(); }
  PythonSizePatterns(const PythonSizePatterns&) = delete;
  PythonSizePatterns& operator=(const PythonSizePatterns&) = delete;
  void stop() { device_.allocator->remove_observer(hooks_); }
  void tick() { analyser_.tick(); }
  py::dict report(std::size_t top) const {
    const SizePatterns patterns = analyser_.patterns(top);
    py::dict result;
    result["allocations"] = patterns.allocations;
    result["distinct_sizes"] = patterns.distinct_sizes;
    result["histogram"] = patterns.histogram;
    result["most_frequent"] = patterns.most_frequent;
    result["repetition"] = patterns.repetition;
    result["text"] = to_string(patterns);
    return result;
  }

 private:
  DeviceEntry& device_;
  SizePatternAnalyser analyser_;  // before hooks_: the hooks call it
  std::shared_ptr<Hooks> hooks_;
};

MemorySnapshot take_snapshot(const DeviceEntry& device, const PythonHistory* history) {
  return memory_snapshot(*device.allocator, history ? &history->recorder() : nullptr);
}

}  // namespace

void bind_observe(py::module_& module) {
  py::class_<PythonMonitor>(module, "Monitor", "Labelled snapshots of a device and their report")
      .def(py::init<DeviceEntry&>(), py::arg("device"), py::keep_alive<1, 2>())
      .def("snapshot", &PythonMonitor::snapshot, py::arg("label"))
      .def("snapshots", &PythonMonitor::snapshots)
      .def("report", &PythonMonitor::report)
      .def("empty_cache", &PythonMonitor::empty_cache,
           "Releases the cache; returns what it gave back, before and after");

  module.def("stats_pages", &stats_pages_list,
             "Every process publishing npumem stats (what npumem smi reads)");

  py::class_<PythonLeakDetector>(module, "LeakDetector",
                                 "Names what stays alive iteration after iteration after warm-up")
      .def(py::init<DeviceEntry&, double, bool, std::size_t, bool, std::vector<std::string>>(),
           py::arg("device"), py::arg("threshold"), py::arg("backtraces"),
           py::arg("warmup_iterations"), py::arg("python_lines"), py::arg("libraries"),
           py::keep_alive<1, 2>())
      .def("mark_baseline", &PythonLeakDetector::mark_baseline)
      .def("tick", &PythonLeakDetector::tick)
      .def("report", &PythonLeakDetector::report)
      .def("detach", &PythonLeakDetector::detach);

  py::class_<PythonSizePatterns>(module, "SizePatterns",
                                 "Requested sizes of a device: histogram, frequent sizes, "
                                 "repetition per iteration")
      .def(py::init<DeviceEntry&>(), py::arg("device"), py::keep_alive<1, 2>())
      .def("tick", &PythonSizePatterns::tick)
      .def("report", &PythonSizePatterns::report, py::arg("top") = 10)
      .def("stop", &PythonSizePatterns::stop);

  py::class_<PythonHistory>(module, "HistoryRecorder", "The allocator's events, in a ring")
      .def(py::init<DeviceEntry&, std::size_t, bool>(), py::arg("device"), py::arg("max_entries"),
           py::arg("backtraces"), py::keep_alive<1, 2>())
      .def("stop", &PythonHistory::stop)
      .def_property_readonly("recorded", &PythonHistory::recorded)
      .def_property_readonly("dropped", &PythonHistory::dropped);

  module.def(
      "memory_summary",
      [](const DeviceEntry& device, const std::string& marks) {
        return memory_summary(*device.allocator, marks);
      },
      py::arg("device"), py::arg("marks"));
  module.def(
      "planned_report",
      [](const DeviceEntry& device, const std::string& marks) {
        const Allocator& allocator = *device.allocator;
        if (allocator.config().strategy != Strategy::planned) return std::string();
        return planned_report(allocator.planned_stats(), marks);
      },
      py::arg("device"), py::arg("marks"));
  module.def(
      "snapshot_json",
      [](const DeviceEntry& device, const PythonHistory* history) {
        std::ostringstream out;
        write_snapshot_json(take_snapshot(device, history), out);
        return out.str();
      },
      py::arg("device"), py::arg("history") = nullptr);
  module.def(
      "chrome_trace",
      [](const DeviceEntry& device, const PythonHistory* history) {
        std::ostringstream out;
        write_chrome_trace(take_snapshot(device, history), out);
        return out.str();
      },
      py::arg("device"), py::arg("history") = nullptr);
}

}  // namespace npumem::python
