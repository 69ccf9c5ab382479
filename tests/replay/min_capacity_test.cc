#include "min_capacity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "npumem/errors.h"
#include "npumem/units.h"
#include "trace.h"

namespace npumem::cli {
namespace {

TEST(MinCapacityTest, HbmOnlySpecReplacesTheTierSizesAndKeepsOtherKeys) {
  EXPECT_EQ(hbm_only_spec("sim", 5 * MiB), "sim:hbm=5242880,ddr=0");
  EXPECT_EQ(hbm_only_spec("sim:hbm=1GiB,backing=host, ddr =2GiB,granularity=1MiB", 3 * MiB),
            "sim:hbm=3145728,ddr=0,backing=host,granularity=1MiB");
}

TEST(MinCapacityTest, HbmOnlySpecNeedsASimDevice) {
  EXPECT_THROW(hbm_only_spec("host", MiB), ConfigError);
  EXPECT_THROW(hbm_only_spec("simulator", MiB), ConfigError);
}

// Injected faults fail probes at random: the search would blame the HBM size for them.
TEST(MinCapacityTest, HbmOnlySpecRefusesInjectedFaults) {
  // fail_ops and seed alone, or a rate of 0, inject nothing: accepted.
  EXPECT_NO_THROW(hbm_only_spec("sim:fail_prob=0,fail_every=0,fail_ops=map,seed=3", MiB));
  for (const char* spec : {"sim:fail_prob=0.2,seed=1", "sim:hbm=1GiB,fail_every=3"}) {
    try {
      hbm_only_spec(spec, MiB);
      ADD_FAILURE() << spec;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("injects faults"), std::string::npos)
          << error.what();
    }
  }
}

bool completes_on(const Trace& trace, std::uint64_t hbm_bytes) {
  ReplayOptions options;
  options.device_spec = hbm_only_spec("sim:granularity=1MiB", hbm_bytes);
  return replay_trace(trace, options).completed();
}

TEST(MinCapacityTest, FindsTheSmallestCompletingHbmToOneMiB) {
  // 12 MiB + 12 MiB + 3 MiB live at the peak.
  const Trace trace =
      parse_trace("a 1 12582912\na 2 12582912\nf 1\na 3 3145728\na 4 12582912\n", "t.trace");
  ReplayOptions options;
  options.device_spec = "sim:granularity=1MiB";
  std::vector<std::uint64_t> probes;
  const std::uint64_t capacity = min_hbm_capacity(
      trace, options, [&probes](std::uint64_t hbm_bytes) { probes.push_back(hbm_bytes); });
  EXPECT_EQ(capacity % kCapacityStep, 0u);
  EXPECT_GE(capacity, peak_live_bytes(trace));
  EXPECT_TRUE(completes_on(trace, capacity));
  EXPECT_FALSE(completes_on(trace, capacity - kCapacityStep));
  EXPECT_FALSE(probes.empty());
}

// The search varies the device's HBM: a tier limit in the settings is not the device's.
TEST(MinCapacityTest, IgnoresTheSettingsTierLimits) {
  const Trace trace = parse_trace("a 1 4194304\n", "t.trace");
  ReplayOptions options;
  options.config.hbm_limit = 2 * MiB;
  EXPECT_EQ(min_hbm_capacity(trace, options), 4 * MiB);
}

TEST(MinCapacityTest, FailsClearlyWhenNoCapacityCompletesTheTrace) {
  // A static arena of 2 MiB cannot hold a 4 MiB request on any device.
  const Trace trace = parse_trace("a 1 4194304\n", "t.trace");
  ReplayOptions options;
  options.config.strategy = Strategy::static_arena;
  options.config.static_size = 2 * MiB;
  try {
    min_hbm_capacity(trace, options);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the trace does not complete on any HBM up to 1.00 TiB");
  }
}

// Segments are reserved per pool: 40 pools of 4 KiB live bytes need 40 segments of 2 MiB,
// far past 64x their 160 KiB (the search gave up below what the replay itself used).
TEST(MinCapacityTest, ManyPoolsNeedTheirSegmentsNotAMultipleOfTheLiveBytes) {
  std::string text;
  for (int k = 0; k < 40; ++k) {
    text += "p pool" + std::to_string(k) + "\na " + std::to_string(k) + " 4096\n";
  }
  const Trace trace = parse_trace(text, "t.trace");
  EXPECT_EQ(min_hbm_capacity(trace, ReplayOptions{}), 80 * MiB);
}

}  // namespace
}  // namespace npumem::cli
