#include <gtest/gtest.h>

#include <string>

#include "device/host_device.h"
#include "device/sim/sim_device.h"
#include "npumem/device.h"
#include "npumem/errors.h"

namespace npumem {
namespace {

std::string error_of(const std::string& spec) {
  try {
    make_device(spec);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(MakeDevice, SimBuildsTheVirtualNpu) {
  const auto device = make_device("sim:hbm=16GiB,ddr=32GiB,id=1");
  ASSERT_NE(dynamic_cast<SimDevice*>(device.get()), nullptr);
  EXPECT_EQ(device->name(), "sim:1");
  EXPECT_EQ(device->tier_info(Tier::hbm).capacity_bytes, 16 * GiB);
  EXPECT_EQ(device->tier_info(Tier::ddr).capacity_bytes, 32 * GiB);
}

TEST(MakeDevice, BareSimUsesTheDefaults) {
  const auto device = make_device("sim");
  EXPECT_EQ(device->name(), "sim:0");
  EXPECT_EQ(device->tier_info(Tier::hbm).capacity_bytes, 64 * GiB);
  EXPECT_EQ(device->tier_info(Tier::ddr).capacity_bytes, 128 * GiB);
  EXPECT_EQ(device->cache_bytes(), 8 * MiB);
  EXPECT_TRUE(device->supports_virtual_memory());
}

TEST(MakeDevice, HostBuildsAHostDevice) {
  const auto device = make_device("host");
  ASSERT_NE(dynamic_cast<HostDevice*>(device.get()), nullptr);
  EXPECT_EQ(device->name(), "host");
  EXPECT_NE(error_of("host:big").find("'host' takes no options"), std::string::npos);
}

#ifdef NPUMEM_WITH_CUDA
// Built with the CUDA backend: a GPU when this machine has one, else an error that
// names the spec.
TEST(MakeDevice, CudaBuildsAGpuOrSaysWhyNot) {
  try {
    const auto device = make_device("cuda:0");
    EXPECT_EQ(device->name(), "cuda:0");
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("'cuda:0'"), std::string::npos) << error.what();
  }
}
#else
TEST(MakeDevice, CudaSaysItWasNotBuilt) {
  for (const char* spec : {"cuda", "cuda:0", "cuda:3"}) {
    EXPECT_NE(error_of(spec).find("CUDA support was not built"), std::string::npos) << spec;
  }
}
#endif

TEST(MakeDevice, UnknownDevicesListTheAcceptedOnes) {
  for (const char* spec : {"", "npu:0", "SIM", "simulator"}) {
    const std::string message = error_of(spec);
    EXPECT_NE(message.find("sim[:key=value,...], host, cuda[:N]"), std::string::npos)
        << spec << ": " << message;
  }
}

TEST(MakeDevice, BadSimSpecsAreRejected) {
  EXPECT_NE(error_of("sim:hbm=oops").find("key 'hbm'"), std::string::npos);
}

// Read as make_device reads the spec: a bad spec (a key given twice too) is refused as
// check_device_spec refuses it.
TEST(MakeDevice, HostAccessibleSpecsAreHostAndHostBackedSims) {
  EXPECT_TRUE(device_spec_is_host_accessible("host"));
  EXPECT_TRUE(device_spec_is_host_accessible("sim:hbm=1GiB,backing=host"));
  EXPECT_FALSE(device_spec_is_host_accessible("sim"));
  EXPECT_FALSE(device_spec_is_host_accessible("sim:backing=none"));
  EXPECT_FALSE(device_spec_is_host_accessible("acl"));
  EXPECT_THROW(device_spec_is_host_accessible("sim:backing=none,backing=host"), ConfigError);
  EXPECT_THROW(device_spec_is_host_accessible("sim:backing=hots"), ConfigError);
  EXPECT_THROW(device_spec_is_host_accessible("gpu"), ConfigError);
}

}  // namespace
}  // namespace npumem
