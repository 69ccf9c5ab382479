// npumem._core.Device: one device of the registry and its allocator, with statistics
// as flat dicts (torch.cuda.memory_stats keys) and snapshots as lists of dicts.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "bindings.h"
#include "device_registry.h"
#include "npumem/config.h"
#include "npumem/errors.h"
#include "npumem/npumem.h"
#include "npumem/process_allocators.h"
#include "npumem/units.h"

namespace py = pybind11;

namespace npumem::python {
namespace {

// A key checked here: pybind11 answered a negative or 2^64 one with its signatures.
std::optional<std::uint64_t> iteration_key(const py::object& key) {
  if (key.is_none()) return std::nullopt;
  const std::string problem =
      "an iteration key is an int from 0 to 2**64 - 1, not " + py::repr(key).cast<std::string>();
  if (!py::isinstance<py::int_>(key) || py::isinstance<py::bool_>(key)) {
    throw py::type_error(problem);
  }
  const unsigned long long value = PyLong_AsUnsignedLongLong(key.ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    throw py::value_error(problem);
  }
  return value;
}

Tier parse_tier(const std::string& name) {
  for (const Tier tier : kAllTiers) {
    if (tier_name(tier) == name) return tier;
  }
  throw ConfigError("unknown tier '" + name + "'; tiers: hbm, ddr");
}

py::dict stats_dict(const Stats& stats) {
  py::dict result;
  for (const auto& [key, value] : stats.as_map()) result[py::str(key)] = value;
  return result;
}

py::dict block_dict(const BlockInfo& block) {
  py::dict result;
  result["address"] = block.address;
  result["size"] = block.size;
  result["requested_size"] = block.requested_bytes;
  result["state"] = block.allocated ? "active_allocated" : "inactive";
  result["tag"] = block.tag;
  return result;
}

// The keys of torch.cuda.memory_snapshot() segments, plus tier and pool: `blocks`, a run
// of mapped blocks of `segment`.
py::dict segment_dict(int device, const SegmentInfo& segment, std::span<const BlockInfo> blocks) {
  std::uint64_t allocated = 0;
  std::uint64_t requested = 0;
  std::uint64_t total = 0;
  py::list block_list;
  for (const BlockInfo& block : blocks) {
    if (block.allocated) {
      allocated += block.size;
      requested += block.requested_bytes;
    }
    total += block.size;
    block_list.append(block_dict(block));
  }
  py::dict result;
  result["device"] = device;
  result["address"] = blocks.front().address;
  result["total_size"] = total;
  result["allocated_size"] = allocated;
  result["active_size"] = allocated;
  result["requested_size"] = requested;
  result["segment_type"] = segment.kind == PoolKind::small ? "small" : "large";
  result["tier"] = std::string(tier_name(segment.tier));
  result["pool"] = segment.pool;
  result["blocks"] = block_list;
  return result;
}

// As PyTorch reports expandable segments: one segment per run of mapped blocks, so that
// total sizes add up to the reserved bytes (an expandable range's unmapped address
// space read as gigabytes of free cache).
py::list snapshot_list(const DeviceEntry& device) {
  py::list segments;
  for (const SegmentInfo& segment : device.allocator->snapshot()) {
    const std::span<const BlockInfo> blocks(segment.blocks);
    std::size_t run = 0;
    for (std::size_t i = 0; i <= blocks.size(); ++i) {
      if (i < blocks.size() && blocks[i].mapped) continue;
      if (i > run)
        segments.append(segment_dict(device.index, segment, blocks.subspan(run, i - run)));
      run = i + 1;
    }
  }
  return segments;
}

py::list pools_list(const Allocator& allocator) {
  py::list pools;
  for (const PoolInfo& pool : allocator.pools()) {
    py::dict entry;
    entry["name"] = pool.name;
    entry["quota_bytes"] = pool.quota_bytes;
    entry["tier"] = pool.tier ? py::object(py::str(std::string(tier_name(*pool.tier))))
                              : py::object(py::none());
    entry["stats"] = stats_dict(pool.stats);
    pools.append(entry);
  }
  return pools;
}

py::dict tier_dict(const Device& device, Tier tier) {
  const TierInfo info = device.tier_info(tier);
  py::dict result;
  result["present"] = info.present;
  result["capacity_bytes"] = info.capacity_bytes;
  result["used_bytes"] = info.used_bytes;
  result["bandwidth_bytes_per_s"] = info.bandwidth_bytes_per_s;
  result["granularity_bytes"] = info.granularity_bytes;
  return result;
}

void* to_pointer(std::uintptr_t address) {
  return reinterpret_cast<void*>(address);
}

py::capsule bridge_capsule(DeviceEntry& device) {
  return py::capsule(static_cast<void*>(&device.bridge), kAllocatorBridgeCapsule);
}

}  // namespace

void bind_devices(py::module_& module) {
  using Entry = DeviceEntry;
  // Entries belong to the registry forever: Python never deletes them.
  py::class_<Entry, std::unique_ptr<Entry, py::nodelete>>(module, "Device",
                                                          "A device and its allocator")
      .def("__repr__",
           [](const Entry& e) {
             return "<npumem.Device " + std::to_string(e.index) + ": " +
                    e.allocator->device().name() + ", " +
                    std::string(strategy_name(e.allocator->config().strategy)) + ">";
           })
      .def_readonly("index", &Entry::index)
      .def_readonly("spec", &Entry::spec)
      .def_readonly("host_accessible", &Entry::host_accessible)
      .def_property_readonly("name", [](const Entry& e) { return e.allocator->device().name(); })
      .def_property_readonly("config",
                             [](const Entry& e) { return to_string(e.allocator->config()); })
      .def_property_readonly(
          "warnings", [](const Entry& e) { return e.allocator->warnings(); },
          "Problems met when the allocator was made that did not stop it, e.g. a fallback")
      .def("stats",
           [](const Entry& e) {
             auto stats = e.allocator->stats().as_map();
             // The planned strategy's figures join the PyTorch keys (planned.hits, ...).
             if (e.allocator->config().strategy == Strategy::planned) {
               stats.merge(e.allocator->planned_stats().as_map());
             }
             py::dict result;
             for (const auto& [key, value] : stats) result[py::str(key)] = value;
             return result;
           })
      .def(
          "stats_since_start",
          [](const Entry& e) {
            py::dict result;
            for (const auto& [key, value] : e.allocator->stats_since_start().as_map()) {
              result[py::str(key)] = value;
            }
            return result;
          },
          "stats() with each peak the highest since the device was made, whatever "
          "reset_peak_stats() did since")
      .def("reset_peak_stats", [](Entry& e) { e.allocator->reset_peak_stats(); })
      .def("reset_accumulated_stats", [](Entry& e) { e.allocator->reset_accumulated_stats(); })
      .def(
          "set_memory_fraction",
          [](Entry& e, double fraction) { e.allocator->set_memory_fraction(fraction); },
          py::arg("fraction"), "Caps the HBM the allocator may reserve at a fraction of it")
      .def_property_readonly("memory_fraction",
                             [](const Entry& e) { return e.allocator->memory_fraction(); })
      .def(
          "mark_iteration",
          [](Entry& e, const py::object& key) { e.allocator->mark_iteration(iteration_key(key)); },
          py::arg("key") = py::none(),
          "Marks the start of an iteration: observers (leak check) and strategies see it; "
          "strategy:planned serves a keyed iteration by its key's plan")
      .def(
          "empty_cache", [](Entry& e) { return e.allocator->empty_cache(); },
          py::call_guard<py::gil_scoped_release>())
      .def("snapshot", [](const Entry& e) { return snapshot_list(e); })
      .def(
          "create_pool",
          [](Entry& e, const std::string& name, std::uint64_t quota_bytes,
             const std::optional<std::string>& tier) {
            e.allocator->create_pool(name, quota_bytes,
                                     tier ? std::optional<Tier>(parse_tier(*tier)) : std::nullopt);
          },
          py::arg("name"), py::arg("quota_bytes") = 0, py::arg("tier") = py::none())
      .def(
          "remove_pool",
          [](Entry& e, const std::string& name) { return e.allocator->remove_pool(name); },
          py::arg("name"), py::call_guard<py::gil_scoped_release>(),
          "Removes a named pool, its memory given back; returns the bytes released")
      .def(
          "copy",
          [](Entry& e, std::uintptr_t dst, std::uintptr_t src, std::size_t bytes) {
            return e.allocator->copy(to_pointer(dst), to_pointer(src), bytes);
          },
          py::arg("dst"), py::arg("src"), py::arg("bytes"),
          py::call_guard<py::gil_scoped_release>(),
          "Copies bytes between two live allocations; returns the modelled seconds")
      .def("pools", [](const Entry& e) { return pools_list(*e.allocator); })
      .def(
          "allocate",
          [](Entry& e, std::size_t bytes, npumem::StreamId stream) {
            return reinterpret_cast<std::uintptr_t>(allocate_for_python(e, bytes, stream));
          },
          py::arg("bytes"), py::arg("stream") = 0, py::call_guard<py::gil_scoped_release>())
      .def(
          "record_stream",
          [](Entry& e, std::uintptr_t ptr, npumem::StreamId stream) {
            e.allocator->record_stream(to_pointer(ptr), stream);
          },
          py::arg("ptr"), py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
          "The live allocation is also used by `stream` (tensor.record_stream)")
      .def(
          "deallocate",
          [](Entry& e, std::uintptr_t ptr) { e.allocator->deallocate(to_pointer(ptr)); },
          py::arg("ptr"), py::call_guard<py::gil_scoped_release>())
      .def(
          "resize",
          [](Entry& e, std::uintptr_t ptr, std::size_t bytes) {
            return e.allocator->resize(to_pointer(ptr), bytes);
          },
          py::arg("ptr"), py::arg("bytes"), py::call_guard<py::gil_scoped_release>(),
          "Grows or shrinks a live allocation in place; False (nothing changed) when it cannot")
      .def(
          "allocation_size",
          [](const Entry& e, std::uintptr_t ptr) {
            return e.allocator->allocation_size(to_pointer(ptr));
          },
          py::arg("ptr"))
      .def(
          "tier_of",
          [](const Entry& e, std::uintptr_t ptr) {
            return std::string(tier_name(e.allocator->tier_of(to_pointer(ptr))));
          },
          py::arg("ptr"))
      .def(
          "largest_free_block",
          [](const Entry& e, const std::string& tier) {
            return e.allocator->largest_free_block(parse_tier(tier));
          },
          py::arg("tier"))
      .def(
          "fragmentation",
          [](const Entry& e, const std::string& tier) {
            return e.allocator->fragmentation(parse_tier(tier));
          },
          py::arg("tier"))
      .def(
          "tier_info",
          [](const Entry& e, const std::string& tier) {
            return tier_dict(e.allocator->device(), parse_tier(tier));
          },
          py::arg("tier"))
      .def("bridge", &bridge_capsule,
           "A capsule with the allocator's plain-function interface, for npumem._torch");

  module.def(
      "create_device",
      [](int index, const std::string& spec, const std::string& conf,
         const std::string& spec_source) -> Entry* {
        return &create_device(index, spec, conf, spec_source);
      },
      py::arg("index"), py::arg("spec"), py::arg("conf") = "", py::arg("spec_source") = "",
      py::return_value_policy::reference,
      "Makes device `index` from a device spec; the config is `conf` over NPUMEM_ALLOC_CONF. "
      "A bad spec's error begins with `spec_source` (NPUMEM_DEVICE) when given");
  module.def("find_device", &find_device, py::arg("index"), py::return_value_policy::reference,
             "The device at `index`, or None");
  module.def("device_indices", &device_indices);
  module.def("check_device_spec", &check_device_spec, py::arg("spec"),
             "Raises ConfigError naming what is wrong with a device spec; makes nothing");
  module.def("spec_is_host_accessible", &spec_is_host_accessible, py::arg("spec"),
             "Whether a device of this spec has host memory behind it (PyTorch's CPU tensors)");
  module.attr("MAX_DEVICES") = kMaxProcessAllocators;
  module.def("publish_after_fork", &npumem_publish_after_fork,
             "In a forked child: its inherited devices on a stats page of its own (npumem smi)");
  module.def(
      "check_config",
      [](const std::string& conf, const std::string& name) {
        return to_string(config_over_environment(conf, name));
      },
      py::arg("conf"), py::arg("name") = "conf",
      "The settings `conf` over NPUMEM_ALLOC_CONF as a config string; ConfigError names a bad "
      "key or value and where it came from (`name` or NPUMEM_ALLOC_CONF)");
  module.def(
      "parse_size", [](const std::string& text) { return parse_size(text); }, py::arg("text"),
      "Bytes from a size such as '512MiB' or '4096'");
  module.def("format_bytes", &format_bytes, py::arg("bytes"), "'1.50 GiB', '512 B'");
}

}  // namespace npumem::python
