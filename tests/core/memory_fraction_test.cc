// set_memory_fraction (torch.cuda.set_per_process_memory_fraction): a cap on the HBM
// the allocator may reserve, named by the out-of-memory error it causes.
#include <gtest/gtest.h>

#include <cmath>

#include "device/sim/sim_device.h"
#include "npumem/allocator.h"
#include "npumem/config.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::shared_ptr<SimDevice> sim(std::uint64_t hbm, std::uint64_t ddr) {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = ddr;
  return std::make_shared<SimDevice>(spec);
}

TEST(MemoryFraction, CapsHbmAndTheOutOfMemoryNamesIt) {
  Allocator allocator(sim(100 * MiB, 0));
  EXPECT_EQ(allocator.memory_fraction(), 1.0);
  allocator.set_memory_fraction(0.5);
  EXPECT_EQ(allocator.memory_fraction(), 0.5);
  void* fits = allocator.allocate(40 * MiB);
  try {
    allocator.allocate(20 * MiB);
    FAIL() << "expected OutOfMemory past half of 100 MiB";
  } catch (const OutOfMemory& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("per-process memory fraction 0.5"), std::string::npos) << text;
    EXPECT_NE(text.find("50.0% of its capacity"), std::string::npos) << text;
    EXPECT_NE(text.find("set_per_process_memory_fraction"), std::string::npos) << text;
    // Named in each API: a C server was sent to Python's name.
    EXPECT_NE(text.find("npumem_set_memory_fraction in C"), std::string::npos) << text;
  }
  EXPECT_EQ(allocator.stats().num_ooms, 1);
  allocator.set_memory_fraction(1.0);  // the whole device again
  void* now_fits = allocator.allocate(20 * MiB);
  allocator.deallocate(now_fits);
  allocator.deallocate(fits);
}

TEST(MemoryFraction, RequestsPastItSpillToDdr) {
  Allocator allocator(sim(100 * MiB, 256 * MiB));
  allocator.set_memory_fraction(0.25);
  void* spilled = allocator.allocate(30 * MiB);
  EXPECT_EQ(allocator.tier_of(spilled), Tier::ddr);
  EXPECT_EQ(allocator.stats().num_spills, 1);
  allocator.deallocate(spilled);
}

// A fraction of 0 leaves no HBM to this process: every request spills, and counts so
// (the device has HBM; the fraction, not the device, sent it to DDR).
TEST(MemoryFraction, AFractionOfZeroSpillsEveryRequest) {
  Allocator allocator(sim(100 * MiB, 256 * MiB));
  allocator.set_memory_fraction(0.0);
  void* spilled = allocator.allocate(3 * MiB);
  EXPECT_EQ(allocator.tier_of(spilled), Tier::ddr);
  EXPECT_EQ(allocator.stats().num_spills, 1);
  allocator.deallocate(spilled);
}

// The fraction caps what is reserved anew; memory reserved already stays and serves, as
// PyTorch reuses its cached blocks under any fraction. A fraction of 0 skipped HBM
// altogether: a free static arena answered "the static arena is full".
TEST(MemoryFraction, AFractionOfZeroStillServesFromMemoryReservedAlready) {
  Allocator caching(sim(100 * MiB, 256 * MiB));
  caching.deallocate(caching.allocate(8 * MiB));
  caching.set_memory_fraction(0.0);
  void* reused = caching.allocate(8 * MiB);
  EXPECT_EQ(caching.tier_of(reused), Tier::hbm);
  EXPECT_EQ(caching.stats().num_spills, 0);
  caching.deallocate(reused);

  Allocator fixed(sim(512 * MiB, 1 * GiB), parse_config("strategy:static,static_size:256MiB"));
  fixed.deallocate(fixed.allocate(64 * MiB));
  fixed.set_memory_fraction(0.0);
  void* in_arena = fixed.allocate(32 * MiB);
  EXPECT_EQ(fixed.tier_of(in_arena), Tier::hbm);
  fixed.deallocate(in_arena);
}

TEST(MemoryFraction, StaysWithinTheHbmSetting) {
  Config config;
  config.hbm_limit = 40 * MiB;
  config.spill_to_ddr = false;
  Allocator allocator(sim(100 * MiB, 0), config);
  allocator.set_memory_fraction(0.9);  // 90 MiB, above the 40 MiB setting
  EXPECT_THROW(allocator.allocate(60 * MiB), OutOfMemory);
}

TEST(MemoryFraction, BadFractionsAreRejectedAndChangeNothing) {
  Allocator allocator(sim(100 * MiB, 0));
  allocator.set_memory_fraction(0.5);
  const std::pair<double, const char*> bad_fractions[] = {
      {-0.1, "got -0.1"},
      {1.5, "got 1.5"},
      {std::nan(""), "got NaN"},
      {-std::nan(""), "got NaN"}};  // "-nan" as 0.0 / 0.0 gave it
  for (const auto& [bad, shown] : bad_fractions) {
    try {
      allocator.set_memory_fraction(bad);
      FAIL() << "accepted fraction " << bad;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("between 0 and 1"), std::string::npos);
      EXPECT_NE(std::string(error.what()).find(shown), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(allocator.memory_fraction(), 0.5);
}

}  // namespace
}  // namespace npumem
