// Sizes at the edges: settings near 2^64, segments larger than the device or the
// pool's quota, and the arithmetic between them.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "core/oom_report.h"
#include "core/pool/align.h"
#include "device/sim/sim_device.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

std::shared_ptr<SimDevice> sim(std::uint64_t hbm) {
  SimSpec spec;
  spec.hbm_bytes = hbm;
  spec.ddr_bytes = 0;
  return std::make_shared<SimDevice>(spec);
}

std::string config_error(const std::string& text) {
  try {
    parse_config(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(SizeEdges, EverySizeKeyHasAnUpperBound) {
  for (const char* key :
       {"granule", "small_size", "small_segment", "large_segment", "large_segment_threshold",
        "expandable_small_granule", "expandable_large_granule", "static_size", "hbm", "ddr"}) {
    const std::string message = config_error(std::string(key) + ":18446744073709551615");
    EXPECT_NE(message.find("'" + std::string(key) + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(" to "), std::string::npos) << message;  // names the range
  }
  EXPECT_NE(config_error("large_segment:16384TiB").find("large_segment"), std::string::npos);
  EXPECT_NE(config_error("granule:2GiB").find("1.00 GiB"), std::string::npos);
  // max_split_size has no upper bound: its default, "unlimited", must read back.
  EXPECT_EQ(parse_config("max_split_size:18446744073709551615").max_split_size,
            std::numeric_limits<std::uint64_t>::max());
}

TEST(SizeEdges, ConfigBuiltInCodeIsCheckedByTheAllocator) {
  Config config;
  config.expandable_small_granule = std::numeric_limits<std::uint64_t>::max();
  config.strategy = Strategy::expandable;
  try {
    Allocator allocator(sim(64 * MiB), config);
    FAIL() << "accepted expandable_small_granule 2^64-1";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expandable_small_granule"), std::string::npos)
        << e.what();
  }
}

TEST(SizeEdges, RoundUpRefusesToWrap) {
  EXPECT_EQ(core::round_up(1000, 512), 1024u);
  EXPECT_THROW(core::round_up(std::numeric_limits<std::size_t>::max() - 10, 512),
               std::overflow_error);
  EXPECT_THROW(core::round_up(10, 0), std::invalid_argument);
}

TEST(SizeEdges, HugeLargeSegmentOverTinyRequestsIsQuickAndFits) {
  // A 1 TiB preferred segment on a 64 GiB device: the request still gets memory,
  // and weighing segment counts stays bounded even for 512-byte large requests.
  Allocator allocator(sim(64 * GiB), parse_config("large_segment:1TiB,small_size:1"));
  void* a = allocator.allocate(3 * MiB);
  void* b = allocator.allocate(512);
  EXPECT_LE(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(64 * GiB));
  allocator.deallocate(a);
  allocator.deallocate(b);
}

TEST(SizeEdges, MidSizeRequestsFitOnASmallDevice) {
  for (std::uint64_t mib = 2; mib <= 7; ++mib) {
    Allocator allocator(sim(8 * MiB));
    void* p = allocator.allocate(mib * MiB);
    EXPECT_NE(p, nullptr) << mib << " MiB";
    allocator.deallocate(p);
  }
}

TEST(SizeEdges, MidSizeRequestsFitInASmallQuota) {
  for (std::uint64_t mib = 2; mib <= 9; ++mib) {
    Allocator allocator(sim(1 * GiB));
    allocator.create_pool("small", 19 * MiB);
    PoolScope scope(allocator, "small");
    void* p = allocator.allocate(mib * MiB);
    EXPECT_NE(p, nullptr) << mib << " MiB";
    for (const PoolInfo& pool : allocator.pools()) {
      if (pool.name == "small") {
        EXPECT_LE(pool.stats.reserved_bytes.all.current, static_cast<std::int64_t>(19 * MiB));
      }
    }
    allocator.deallocate(p);
  }
}

TEST(SizeEdges, DeviceRefusalIsNotBlamedOnTheLiveTensors) {
  SimSpec spec;
  spec.hbm_bytes = 1 * GiB;
  spec.ddr_bytes = 0;
  spec.faults.probability = 1.0;
  Allocator allocator(std::make_shared<SimDevice>(spec));
  try {
    allocator.allocate(3 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find("live tensors need more"), std::string::npos) << message;
    EXPECT_NE(message.find("device refused"), std::string::npos) << message;
  }
}

std::string oom_message(Allocator& allocator, std::size_t bytes) {
  try {
    allocator.allocate(bytes);
  } catch (const OutOfMemory& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected OutOfMemory for " << bytes << " bytes";
  return {};
}

// A request near 2^64 beside live tensors: their sum wrapped in the advice's checks, which
// then blamed the device; and the "rounded" size, which cannot be, was the request again.
TEST(SizeEdges, ARequestPastAnyBlockIsBlamedOnItsSize) {
  Allocator allocator(sim(1 * GiB));
  void* live = allocator.allocate(1 * KiB);
  for (const std::size_t bytes :
       {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() - 100}) {
    const std::string message = oom_message(allocator, bytes);
    EXPECT_EQ(message.find("device refused"), std::string::npos) << message;
    EXPECT_NE(message.find("Advice: no block can hold the request (16.0 EiB)"), std::string::npos)
        << message;
    EXPECT_NE(
        message.find(std::to_string(bytes) + " bytes requested, more than any block can hold)"),
        std::string::npos)
        << message;
  }
  allocator.deallocate(live);
}

// Free memory cached where the request cannot use it (another pool's segment, the other
// size class's) was blamed on the live tensors, or on the device.
TEST(SizeEdges, FreeMemoryCachedOutOfReachIsNotBlamedOnTheLiveTensors) {
  SimSpec spec;
  spec.hbm_bytes = 30 * MiB;
  spec.ddr_bytes = 0;
  {
    // Caching: pool a's 20 MiB segment holds a live 4 MiB block; pool b's 12 MiB needs
    // a segment of its own, which does not fit beside it.
    Allocator allocator(std::make_shared<SimDevice>(spec));
    allocator.create_pool("a");
    allocator.create_pool("b");
    void* kept = nullptr;
    {
      PoolScope scope(allocator, "a");
      kept = allocator.allocate(4 * MiB);
    }
    PoolScope scope(allocator, "b");
    const std::string message = oom_message(allocator, 12 * MiB);
    EXPECT_EQ(message.find("live tensors need more"), std::string::npos) << message;
    EXPECT_NE(message.find("16.0 MiB is cached free, but in segments this request cannot use"),
              std::string::npos)
        << message;
    allocator.deallocate(kept);
  }
  {
    // Expandable, three pools on 16 MiB: the last small request finds the free space
    // within granules other pools' live blocks use.
    spec.hbm_bytes = 16 * MiB;
    Allocator allocator(std::make_shared<SimDevice>(spec), parse_config("strategy:expandable"));
    allocator.create_pool("a");
    allocator.create_pool("b");
    std::vector<void*> kept{allocator.allocate(1 * MiB)};
    {
      PoolScope scope(allocator, "a");
      kept.push_back(allocator.allocate(4 * MiB));
      kept.push_back(allocator.allocate(300000));
    }
    PoolScope scope(allocator, "b");
    kept.push_back(allocator.allocate(8 * MiB));
    const std::string message = oom_message(allocator, 1000);
    EXPECT_EQ(message.find("live tensors need more"), std::string::npos) << message;
    EXPECT_NE(message.find("is cached free, but within granules"), std::string::npos) << message;
    for (void* p : kept) allocator.deallocate(p);
  }
  // Small requests when the free memory is a large segment's: the new small segment
  // fits beside the reserved bytes' rounding only, not within the limit.
  spec.hbm_bytes = 23 * MiB;
  Allocator allocator(std::make_shared<SimDevice>(spec));
  void* large = allocator.allocate(4 * MiB);  // a 20 MiB segment, 16 MiB of it free
  std::vector<void*> small;
  for (int i = 0; i < 4; ++i) small.push_back(allocator.allocate(512 * KiB));  // 2 MiB
  const std::string message = oom_message(allocator, 512 * KiB);
  EXPECT_EQ(message.find("live tensors need more"), std::string::npos) << message;
  EXPECT_EQ(message.find("device refused"), std::string::npos) << message;
  EXPECT_NE(message.find("cached free"), std::string::npos) << message;
  for (void* p : small) allocator.deallocate(p);
  allocator.deallocate(large);
}

// Under the static strategy a named pool's arena is its quota: raising static_size
// (what the advice said) changes nothing for it.
TEST(SizeEdges, AFullStaticPoolIsToldToRaiseItsQuota) {
  SimSpec spec;
  spec.hbm_bytes = 256 * MiB;
  spec.ddr_bytes = 0;
  Allocator allocator(std::make_shared<SimDevice>(spec),
                      parse_config("strategy:static,static_size:128MiB"));
  allocator.create_pool("pa", 16 * MiB);
  PoolScope scope(allocator, "pa");
  void* kept = allocator.allocate(15 * MiB);
  const std::string message = oom_message(allocator, 2 * MiB);
  EXPECT_EQ(message.find("static_size"), std::string::npos) << message;
  EXPECT_NE(message.find("raise the pool's quota"), std::string::npos) << message;
  allocator.deallocate(kept);
}

TEST(SizeEdges, FragmentationAdviceFitsTheStrategy) {
  core::OomContext context;
  context.requested_bytes = context.rounded_bytes = 16 * MiB;
  context.pool = "default";
  core::TierMemory& hbm = context.tiers[static_cast<int>(Tier::hbm)];
  hbm.present = true;
  hbm.capacity_bytes = hbm.limit_bytes = hbm.reserved_bytes = 64 * MiB;
  hbm.allocated_bytes = 32 * MiB;
  hbm.free_cached_bytes = 32 * MiB;
  hbm.largest_free_bytes = 4 * MiB;
  context.strategy = "caching";
  EXPECT_NE(core::explain_out_of_memory(context).find("expandable_segments:true"),
            std::string::npos);
  context.strategy = "expandable";
  const std::string expandable = core::explain_out_of_memory(context);
  EXPECT_EQ(expandable.find("expandable_segments:true"), std::string::npos) << expandable;
  EXPECT_NE(expandable.find("fragmented"), std::string::npos) << expandable;
}

}  // namespace
}  // namespace npumem
