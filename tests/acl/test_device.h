// Devices for the allocator tests: the virtual NPU, or an Ascend NPU ("acl:0") over
// the test double of libascendcl.so (tests/acl/acl_double.cc), set up with the same
// capacities, granularity and faults. A test parameterised over kBackends runs on both.
//
// NPUMEM_ACL_LIBRARY, when set before the test starts, wins (scripts/check-ascend.sh
// points it at a real CANN install); the tests then run on the real NPU with the
// capacities as acl:0's hbm=/ddr= limits, and what needs the double's controls (call
// counts, injected faults) skips.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"
#include "npumem/device.h"

namespace npumem::testing {

enum class Backend { sim, acl };
inline constexpr std::array<Backend, 2> kBackends = {Backend::sim, Backend::acl};

inline std::string backend_name(Backend backend) {
  return backend == Backend::sim ? "sim" : "acl";
}

// GoogleTest prints a parameter with this (ctest names show "sim" / "acl").
inline void PrintTo(Backend backend, std::ostream* out) {
  *out << backend_name(backend);
}

// The double's test controls, found in the libascendcl.so npumem loads; absent from
// a real CANN.
class AclDouble {
 public:
  // The library for acl:0 in this process: the double with the virtual-memory group
  // (vmm true) or without it, unless NPUMEM_ACL_LIBRARY was set from outside.
  static AclDouble& instance(bool vmm = true) {
    static AclDouble double_library(vmm);
    return double_library;
  }

  bool present() const { return configure_ != nullptr; }
  void configure(const SimSpec& spec) const {
    if (configure_ != nullptr) configure_(to_string(spec).substr(4).c_str());  // drops "sim:"
  }
  bool call_counts(DeviceCallCounts* out) const {
    return call_counts_ != nullptr && call_counts_(out);
  }
  bool set_faults(const FaultSpec& faults) const {
    return set_faults_ != nullptr && set_faults_(&faults);
  }
  long long device_refs() const { return device_refs_ != nullptr ? device_refs_() : -1; }
  bool launch_kernel(StreamId stream) const { return launch_ != nullptr && launch_(stream); }
  bool finish_kernel(StreamId stream) const { return finish_ != nullptr && finish_(stream); }
  std::size_t live_events() const { return live_events_ != nullptr ? live_events_() : 0; }
  bool initialised() const { return initialised_ != nullptr && initialised_(); }

 private:
  explicit AclDouble(bool vmm) {
    const std::string path =
        std::string(NPUMEM_ACL_DOUBLE_DIR) + (vmm ? "/vmm" : "/novmm") + "/libascendcl.so";
    setenv("NPUMEM_ACL_LIBRARY", path.c_str(), 0);
    void* handle = dlopen(std::getenv("NPUMEM_ACL_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    configure_ =
        reinterpret_cast<void (*)(const char*)>(dlsym(handle, "npumem_acl_double_configure"));
    call_counts_ = reinterpret_cast<bool (*)(DeviceCallCounts*)>(
        dlsym(handle, "npumem_acl_double_call_counts"));
    set_faults_ =
        reinterpret_cast<bool (*)(const FaultSpec*)>(dlsym(handle, "npumem_acl_double_set_faults"));
    device_refs_ =
        reinterpret_cast<long long (*)()>(dlsym(handle, "npumem_acl_double_device_refs"));
    initialised_ = reinterpret_cast<bool (*)()>(dlsym(handle, "npumem_acl_double_initialised"));
    launch_ =
        reinterpret_cast<bool (*)(StreamId)>(dlsym(handle, "npumem_acl_double_launch_kernel"));
    finish_ =
        reinterpret_cast<bool (*)(StreamId)>(dlsym(handle, "npumem_acl_double_finish_kernel"));
    live_events_ =
        reinterpret_cast<std::size_t (*)()>(dlsym(handle, "npumem_acl_double_live_events"));
  }

  void (*configure_)(const char*) = nullptr;
  bool (*call_counts_)(DeviceCallCounts*) = nullptr;
  bool (*set_faults_)(const FaultSpec*) = nullptr;
  long long (*device_refs_)() = nullptr;
  bool (*initialised_)() = nullptr;
  bool (*launch_)(StreamId) = nullptr;
  bool (*finish_)(StreamId) = nullptr;
  std::size_t (*live_events_)() = nullptr;
};

// Whether injected faults and call counts exist on this backend: on acl:0 only over the
// test double, not on a real NPU.
inline bool controls_available(Backend backend) {
  return backend == Backend::sim || AclDouble::instance().present();
}

// A device of either backend with the capacities, granularity, virtual-memory switch
// and faults of `spec`, and the virtual NPU's call counts and fault controls.
class TestDevice {
 public:
  TestDevice(Backend backend, const SimSpec& spec) : backend_(backend) {
    if (backend == Backend::sim) {
      sim_ = std::make_shared<SimDevice>(spec);
      device_ = sim_;
      return;
    }
    AclDouble::instance().configure(spec);
    std::string text =
        "acl:0,hbm=" + std::to_string(spec.hbm_bytes) + ",ddr=" + std::to_string(spec.ddr_bytes);
    if (!spec.virtual_memory) text += ",vmm=off";
    device_ = make_device(text);
  }

  const std::shared_ptr<Device>& device() const { return device_; }
  Backend backend() const { return backend_; }

  // The device calls made so far; false on a real NPU (no counts to read).
  bool call_counts(DeviceCallCounts* out) const {
    if (sim_) {
      *out = sim_->call_counts();
      return true;
    }
    return AclDouble::instance().call_counts(out);
  }
  // Replaces the fault plan; false on a real NPU.
  bool set_faults(const FaultSpec& faults) const {
    if (sim_) {
      sim_->set_faults(faults);
      return true;
    }
    return AclDouble::instance().set_faults(faults);
  }
  // Simulated stream work (SimDevice::launch_kernel); false on a real NPU.
  bool launch_kernel(StreamId stream) const {
    if (sim_) {
      sim_->launch_kernel(stream);
      return true;
    }
    return AclDouble::instance().launch_kernel(stream);
  }
  bool finish_kernel(StreamId stream) const {
    if (sim_) {
      sim_->finish_kernel(stream);
      return true;
    }
    return AclDouble::instance().finish_kernel(stream);
  }
  std::size_t live_events() const {
    return sim_ ? sim_->live_events() : AclDouble::instance().live_events();
  }

 private:
  Backend backend_;
  std::shared_ptr<SimDevice> sim_;
  std::shared_ptr<Device> device_;
};

// Data goes in and out through the device's copy (aclrtMemcpy on an NPU), so round
// trips hold on real device memory, which the host cannot touch.
inline void fill(Device& device, void* ptr, unsigned char value, std::size_t bytes) {
  const std::vector<unsigned char> data(bytes, value);
  device.copy(ptr, Tier::hbm, data.data(), Tier::hbm, bytes);
}

inline bool holds(Device& device, const void* ptr, unsigned char value, std::size_t bytes) {
  std::vector<unsigned char> data(bytes);
  device.copy(data.data(), Tier::hbm, ptr, Tier::hbm, bytes);
  return std::all_of(data.begin(), data.end(), [&](unsigned char b) { return b == value; });
}

}  // namespace npumem::testing
