// Pools pinned to a tier and copies between tiers (Allocator::create_pool with a tier,
// Allocator::copy).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "device/sim/sim_device.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::shared_ptr<Device> backed_device(std::uint64_t hbm = 64 * MiB, std::uint64_t ddr = 256 * MiB) {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = ddr;
  spec.backing = Backing::host;
  return std::make_shared<SimDevice>(spec);
}

TEST(TierPool, DdrPoolAllocatesFromDdrEvenWhenHbmHasRoom) {
  Allocator allocator(backed_device());
  allocator.create_pool("weights", 0, Tier::ddr);
  void* weight = nullptr;
  {
    PoolScope scope(allocator, "weights");
    weight = allocator.allocate(8 * MiB);
  }
  void* activation = allocator.allocate(8 * MiB);
  EXPECT_EQ(allocator.tier_of(weight), Tier::ddr);
  EXPECT_EQ(allocator.tier_of(activation), Tier::hbm);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.num_spills, 0);
  EXPECT_EQ(stats.allocated_bytes.by_tier[static_cast<int>(Tier::ddr)].current,
            static_cast<std::int64_t>(8 * MiB));
  for (const PoolInfo& pool : allocator.pools()) {
    EXPECT_EQ(pool.tier.has_value(), pool.name == "weights") << pool.name;
  }
  allocator.deallocate(weight);
  allocator.deallocate(activation);
}

TEST(TierPool, HbmPoolNeverSpillsButRaisesOutOfMemoryNamingThePin) {
  Allocator allocator(backed_device(32 * MiB));
  allocator.create_pool("shard", 0, Tier::hbm);
  PoolScope scope(allocator, "shard");
  void* first = allocator.allocate(24 * MiB);
  try {
    allocator.allocate(24 * MiB);
    FAIL() << "a pool pinned to HBM spilled to DDR";
  } catch (const OutOfMemory& error) {
    EXPECT_NE(std::string(error.what()).find("pinned to hbm"), std::string::npos) << error.what();
  }
  EXPECT_EQ(allocator.stats().num_spills, 0);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, static_cast<std::int64_t>(24 * MiB));
  allocator.deallocate(first);
}

TEST(TierPool, TierTheDeviceLacksIsAConfigErrorAndNoPoolIsMade) {
  Allocator allocator(backed_device(64 * MiB, 0));
  try {
    allocator.create_pool("weights", 0, Tier::ddr);
    FAIL() << "pinned to an absent tier";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("has no ddr tier"), std::string::npos) << error.what();
  }
  EXPECT_EQ(allocator.pools().size(), 1u);
  allocator.create_pool("weights", 0, Tier::hbm);  // the name is still free
}

TEST(TierPool, StaticStrategyRefusesADdrPool) {
  Config config;
  config.strategy = Strategy::static_arena;
  config.static_size = 8 * MiB;
  Allocator allocator(backed_device(), config);
  EXPECT_THROW(allocator.create_pool("weights", 8 * MiB, Tier::ddr), ConfigError);
}

// A tier smaller than its granularity holds nothing (`hbm=12` read as 12 bytes, not
// GiB): every request spills, so the allocator says why; a usable tier says nothing.
TEST(TierPool, ATierSmallerThanAGranuleIsNamedInAWarning) {
  Allocator tiny(backed_device(12, 256 * MiB));
  ASSERT_EQ(tiny.warnings().size(), 1u);
  EXPECT_NE(tiny.warnings()[0].find("tier hbm of device sim:0 may hold 12 B, less than its "
                                    "granularity of 2.00 MiB"),
            std::string::npos)
      << tiny.warnings()[0];
  void* p = tiny.allocate(4096);
  EXPECT_EQ(tiny.stats().allocated_bytes.by_tier[static_cast<int>(Tier::ddr)].current, 4096);
  tiny.deallocate(p);
  // A size with a unit below a granule: no hint about units.
  const Allocator small(backed_device(1 * MiB, 0));
  ASSERT_EQ(small.warnings().size(), 1u);
  EXPECT_EQ(small.warnings()[0].find("without a unit"), std::string::npos) << small.warnings()[0];
  EXPECT_TRUE(Allocator(backed_device(2 * MiB, 0)).warnings().empty());
  EXPECT_TRUE(Allocator(backed_device(64 * MiB, 0)).warnings().empty());
}

// Settings that cannot act say so rather than being dropped without a word: a limit
// above the tier's capacity (the capacity is the limit), a static_size under a strategy
// that makes no static arena.
TEST(TierPool, SettingsThatCannotActAreNamedInWarnings) {
  const auto warnings_of = [](const Config& config) {
    return Allocator(backed_device(64 * MiB, 0), config).warnings();
  };
  Config limits;
  limits.hbm_limit = 1 * GiB;
  EXPECT_EQ(warnings_of(limits),
            std::vector<std::string>{"hbm:1.00 GiB is more than the HBM of device sim:0 (64.0 "
                                     "MiB): the capacity is the limit"});
  Config absent;
  absent.ddr_limit = 1 * GiB;
  EXPECT_EQ(warnings_of(absent), std::vector<std::string>{"ddr:1.00 GiB is set, but device sim:0 "
                                                          "has no DDR: it is not used"});
  Config unused;
  unused.static_size = 8 * MiB;
  EXPECT_EQ(warnings_of(unused),
            std::vector<std::string>{"static_size:8.00 MiB is set, but strategy:caching makes "
                                     "no static arena: it is not used"});
  unused.strategy = Strategy::expandable;  // kept for expandable_fallback on other devices
  EXPECT_TRUE(warnings_of(unused).empty());
  // Another strategy's fallback keys.
  Config fallbacks;
  fallbacks.planned_fallback = PlannedFallback::caching;
  fallbacks.expandable_fallback = ExpandableFallback::static_arena;
  fallbacks.static_fallback = true;
  EXPECT_EQ(warnings_of(fallbacks),
            (std::vector<std::string>{
                "planned_fallback:caching is set, but strategy:caching is not planned: it is "
                "not used",
                "expandable_fallback:static is set, but strategy:caching is not expandable: it "
                "is not used",
                "static_fallback:true is set, but strategy:caching makes no static arena: it is "
                "not used"}));
  fallbacks.strategy = Strategy::planned;
  fallbacks.static_fallback = false;
  EXPECT_TRUE(warnings_of(fallbacks).empty());
}

TEST(TierCopy, MovesTheBytesAndAccountsModelledTimePerDirection) {
  Allocator allocator(backed_device());
  allocator.create_pool("weights", 0, Tier::ddr);
  void* master = nullptr;
  {
    PoolScope scope(allocator, "weights");
    master = allocator.allocate(4 * MiB);
  }
  std::vector<unsigned char> pattern(4 * MiB);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7);
  std::memcpy(master, pattern.data(), pattern.size());
  void* copy = allocator.allocate(4 * MiB);

  const double seconds = allocator.copy(copy, master, 4 * MiB);
  EXPECT_EQ(std::memcmp(copy, pattern.data(), pattern.size()), 0);
  // The slower tier bounds it: DDR's 50 GB/s.
  EXPECT_DOUBLE_EQ(seconds, static_cast<double>(4 * MiB) / 50e9);
  allocator.copy(master, copy, MiB);

  const Stats stats = allocator.stats();
  const CopyStat& in = stats.copies[static_cast<int>(Tier::ddr)][static_cast<int>(Tier::hbm)];
  const CopyStat& out = stats.copies[static_cast<int>(Tier::hbm)][static_cast<int>(Tier::ddr)];
  EXPECT_EQ(in.count, 1);
  EXPECT_EQ(in.bytes, static_cast<std::int64_t>(4 * MiB));
  EXPECT_DOUBLE_EQ(in.modelled_seconds, seconds);
  EXPECT_EQ(out.bytes, static_cast<std::int64_t>(MiB));
  const auto map = stats.as_map();
  EXPECT_EQ(map.at("copy_bytes.ddr_to_hbm"), static_cast<std::int64_t>(4 * MiB));
  EXPECT_EQ(map.at("num_copies.hbm_to_ddr"), 1);
  EXPECT_EQ(map.at("copy_modelled_ns.ddr_to_hbm"), std::llround(seconds * 1e9));
  EXPECT_EQ(map.at("copy_bytes.hbm_to_hbm"), 0);
  allocator.deallocate(copy);
  allocator.deallocate(master);
}

TEST(TierCopy, BadAddressesAndOverrunsChangeNothing) {
  Allocator allocator(backed_device());
  void* a = allocator.allocate(MiB);
  void* b = allocator.allocate(2 * MiB);
  std::memset(a, 1, MiB);
  std::memset(b, 2, 2 * MiB);
  EXPECT_THROW(allocator.copy(a, b, 2 * MiB), Error);
  int outside = 0;
  EXPECT_THROW(allocator.copy(a, &outside, sizeof outside), InvalidPointer);
  // A pointer inside a live allocation is named as such, not as "not live".
  try {
    allocator.copy(a, static_cast<char*>(b) + 4096, 64);
    ADD_FAILURE() << "copied from inside an allocation";
  } catch (const InvalidPointer& error) {
    EXPECT_NE(std::string(error.what()).find("invalid copy: pointer 0x"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what())
                  .find("is 4096 bytes inside a block; pass the pointer "
                        "allocate() returned"),
              std::string::npos)
        << error.what();
  }
  // A copy of no bytes moves nothing and counts nothing.
  EXPECT_EQ(allocator.copy(a, b, 0), 0.0);
  EXPECT_TRUE(allocator.owns(a));
  EXPECT_FALSE(allocator.owns(&outside));
  EXPECT_FALSE(allocator.owns(static_cast<char*>(a) + 64));
  EXPECT_EQ(static_cast<unsigned char*>(a)[0], 1);
  EXPECT_EQ(allocator.stats().as_map().at("num_copies.hbm_to_hbm"), 0);
  allocator.deallocate(a);
  allocator.deallocate(b);
  EXPECT_FALSE(allocator.owns(a));
  // A small block freed may stay in this thread's front cache: free all the same.
  void* small = allocator.allocate(512);
  EXPECT_TRUE(allocator.owns(small));
  allocator.deallocate(small);
  EXPECT_FALSE(allocator.owns(small));
}

TEST(TierCopy, UnbackedDeviceModelsTheTimeWithoutTouchingMemory) {
  SimSpec spec;
  spec.hbm_bytes = 64 * MiB;
  spec.ddr_bytes = 64 * MiB;
  spec.ddr_bandwidth = 10'000'000'000;
  Allocator allocator(std::make_shared<SimDevice>(spec));
  allocator.create_pool("weights", 0, Tier::ddr);
  void* master = nullptr;
  {
    PoolScope scope(allocator, "weights");
    master = allocator.allocate(10 * MiB);
  }
  void* copy = allocator.allocate(10 * MiB);
  EXPECT_DOUBLE_EQ(allocator.copy(copy, master, 10 * MiB), static_cast<double>(10 * MiB) / 10e9);
  allocator.deallocate(copy);
  allocator.deallocate(master);
}

}  // namespace
}  // namespace npumem
