// make_device: the one place that turns a device spec string into a device.
#include <array>
#include <string>

#include "device/acl/acl_device.h"
#include "device/acl/acl_spec.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_spec.h"
#include "host_device.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#ifdef NPUMEM_WITH_CUDA
#include "device/cuda/cuda_device.h"
#endif

namespace npumem {
namespace {

constexpr std::string_view kAccepted =
    "sim[:key=value,...], host, cuda[:N], acl[:N[,key=value,...]]";

// Each backend claims the specs whose first word (before ':') is its name. check
// reads a spec as make would, and makes nothing.
struct Backend {
  std::string_view name;
  std::shared_ptr<Device> (*make)(std::string_view spec);
  void (*check)(std::string_view spec);
};

std::shared_ptr<Device> make_sim(std::string_view spec) {
  return std::make_shared<SimDevice>(parse_sim_spec(spec));
}

void check_sim(std::string_view spec) {
  parse_sim_spec(spec);
}

void check_host(std::string_view spec) {
  if (spec != "host") {
    throw ConfigError("bad device spec '" + std::string(spec) + "': 'host' takes no options");
  }
}

std::shared_ptr<Device> make_host(std::string_view spec) {
  check_host(spec);
  return std::make_shared<HostDevice>();
}

#ifdef NPUMEM_WITH_CUDA
std::shared_ptr<Device> make_cuda(std::string_view spec) {
  return std::make_shared<CudaDevice>(CudaDevice::parse_ordinal(spec));
}

void check_cuda(std::string_view spec) {
  CudaDevice::parse_ordinal(spec);
}
#else
// A CUDA backend registers here when npumem is built with CUDA; this build has none.
[[noreturn]] void check_cuda(std::string_view spec) {
  throw ConfigError("bad device spec '" + std::string(spec) +
                    "': CUDA support was not built into npumem; use sim or host");
}

std::shared_ptr<Device> make_cuda(std::string_view spec) {
  check_cuda(spec);
}
#endif

// The Ascend backend is always built: libascendcl.so is looked for at run time.
std::shared_ptr<Device> make_acl(std::string_view spec) {
  return std::make_shared<AclDevice>(parse_acl_spec(spec), std::string(spec));
}

void check_acl(std::string_view spec) {
  parse_acl_spec(spec);
}

constexpr std::array<Backend, 4> kBackends = {{{"sim", make_sim, check_sim},
                                               {"host", make_host, check_host},
                                               {"cuda", make_cuda, check_cuda},
                                               {"acl", make_acl, check_acl}}};

const Backend& backend_for(std::string_view spec) {
  const std::string_view word = spec.substr(0, spec.find(':'));
  for (const Backend& backend : kBackends) {
    if (backend.name == word) return backend;
  }
  throw ConfigError("bad device spec '" + std::string(spec) + "': unknown device '" +
                    std::string(word) + "' (accepted: " + std::string(kAccepted) + ")");
}

}  // namespace

std::shared_ptr<Device> make_device(std::string_view spec) {
  return backend_for(spec).make(spec);
}

void check_device_spec(std::string_view spec) {
  backend_for(spec).check(spec);
}

bool device_spec_is_host_accessible(std::string_view spec) {
  const Backend& backend = backend_for(spec);
  backend.check(spec);
  if (backend.name == "host") return true;
  return backend.name == "sim" && parse_sim_spec(spec).backing == Backing::host;
}

}  // namespace npumem
