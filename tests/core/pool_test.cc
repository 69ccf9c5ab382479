#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "acl/test_device.h"
#include "npumem/allocator.h"
#include "npumem/config.h"
#include "npumem/device.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Every test runs on the virtual NPU and on acl:0 over the test double of libascendcl.so.
class Pool : public ::testing::TestWithParam<testing::Backend> {
 protected:
  std::shared_ptr<Device> device() const {
    SimSpec spec;
    spec.hbm_bytes = 1 * GiB;
    spec.ddr_bytes = 0;
    return testing::TestDevice(GetParam(), spec).device();
  }
};

// Pool names are printed in tables, reports and error messages: a control character
// (a NUL, a tab, a newline) would cut or break them, so it is refused, shown escaped.
TEST_P(Pool, ANameWithAControlCharacterIsRefused) {
  Allocator allocator(device());
  for (const std::string& name :
       {std::string("a\0b", 3), std::string("tab\there"), std::string("x\n")}) {
    try {
      allocator.create_pool(name, 0);
      ADD_FAILURE() << "accepted a pool name with a control character";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("holds a control character"), std::string::npos)
          << error.what();
      EXPECT_EQ(std::string(error.what()).find_first_of(std::string("\0\t\n", 3)),
                std::string::npos)
          << "the message shows it escaped";
    }
  }
  EXPECT_EQ(allocator.pools().size(), 1u);
  try {
    PoolScope scope(allocator, "x\n");
    ADD_FAILURE() << "a scope of an unknown pool";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown pool 'x\\x0a'"), std::string::npos)
        << error.what();
  }
  allocator.create_pool("model_a.encoder-1", 0);  // anything printable goes
}

TEST_P(Pool, AQuotaNotInWholeGranulesIsAcceptedAndSaid) {
  Allocator allocator(device());
  std::size_t granule = std::numeric_limits<std::size_t>::max();
  for (Tier tier : kAllTiers) {
    const TierInfo info = allocator.device().tier_info(tier);
    if (info.present) granule = std::min<std::size_t>(granule, info.granularity_bytes);
  }
  allocator.create_pool("whole", 2 * granule);
  EXPECT_TRUE(allocator.warnings().empty());
  const std::uint64_t quota = 2 * granule + granule / 2;
  allocator.create_pool("odd", quota);
  ASSERT_EQ(allocator.warnings().size(), 1u);
  EXPECT_NE(allocator.warnings()[0].find(
                "pool 'odd': a quota of " + format_bytes(quota) + " (" + std::to_string(quota) +
                " bytes) is not a whole number of granules of " + format_bytes(granule)),
            std::string::npos)
      << allocator.warnings()[0];
  EXPECT_NE(allocator.warnings()[0].find("the pool holds at most " + format_bytes(2 * granule)),
            std::string::npos);
  PoolScope scope(allocator, "odd");
  void* held = allocator.allocate(2 * granule);
  EXPECT_THROW(allocator.allocate(512), OutOfMemory);
  allocator.deallocate(held);
}

// A quota past all the pool's tiers may hold never binds: accepted (a config shared by
// devices of other sizes sets it), but said, as a typo of a unit (1EiB for 1GiB) would be.
TEST(PoolQuota, AQuotaPastWhatItsTiersHoldIsSaid) {
  Allocator allocator(make_device("sim:hbm=1GiB,ddr=2GiB"));
  allocator.create_pool("fits", 3 * GiB);
  EXPECT_TRUE(allocator.warnings().empty()) << allocator.warnings()[0];
  allocator.create_pool("big", 1024 * 1024 * GiB);
  ASSERT_EQ(allocator.warnings().size(), 1u);
  EXPECT_EQ(allocator.warnings()[0],
            "pool 'big': a quota of 1.00 PiB is more than its tiers may hold on device sim:0 "
            "(3.00 GiB: hbm 1.00 GiB, ddr 2.00 GiB), so it never stops the pool; the tiers' "
            "limits do");
  allocator.create_pool("pinned", 2 * GiB, Tier::hbm);
  ASSERT_EQ(allocator.warnings().size(), 2u);
  EXPECT_NE(allocator.warnings()[1].find("(1.00 GiB: hbm 1.00 GiB)"), std::string::npos)
      << allocator.warnings()[1];
}

// A trace's `p` line holds a pool's name in one field: a name with blanks works here but
// cannot be recorded (npumem.torch capture refuses it), so it is said when made.
TEST(PoolName, ANameWithBlanksIsAcceptedAndSaid) {
  Allocator allocator(make_device("sim:hbm=1GiB,ddr=0"));
  allocator.create_pool("model a");
  ASSERT_EQ(allocator.warnings().size(), 1u);
  EXPECT_EQ(allocator.warnings()[0],
            "pool 'model a': a name with blanks cannot be written in a trace (npumem.torch "
            "capture and traces name a pool in one field); one word, e.g. model_a, can");
}

TEST_P(Pool, ScopeRoutesAllocationsAndStatsArePerPool) {
  Allocator allocator(device());
  allocator.create_pool("model_a", 0);
  void* outside = allocator.allocate(MiB);
  void* inside = nullptr;
  EXPECT_EQ(PoolScope::current_pool(), "default");
  {
    PoolScope scope(allocator, "model_a");
    EXPECT_EQ(PoolScope::current_pool(), "model_a");
    inside = allocator.allocate(3 * MiB);
    std::thread([] { EXPECT_EQ(PoolScope::current_pool(), "default"); }).join();
  }
  EXPECT_EQ(PoolScope::current_pool(), "default");
  void* after = allocator.allocate(MiB);
  for (const PoolInfo& pool : allocator.pools()) {
    const auto allocated = pool.stats.allocated_bytes.all.current;
    const std::uint64_t expected = pool.name == "model_a" ? 3 * MiB : 2 * MiB;
    EXPECT_EQ(allocated, static_cast<std::int64_t>(expected)) << pool.name;
  }
  for (const SegmentInfo& s : allocator.snapshot()) {
    const auto inside_address = reinterpret_cast<std::uint64_t>(inside);
    const bool holds_inside = inside_address >= s.address && inside_address < s.address + s.size;
    EXPECT_EQ(holds_inside, s.pool == "model_a");
  }
  allocator.deallocate(outside);
  allocator.deallocate(inside);
  allocator.deallocate(after);
}

TEST_P(Pool, OnePoolsCacheNeverServesAnother) {
  Allocator allocator(device());
  allocator.create_pool("a");
  allocator.create_pool("b");
  void* from_a = nullptr;
  {
    PoolScope scope(allocator, "a");
    from_a = allocator.allocate(8 * MiB);
    allocator.deallocate(from_a);
  }
  PoolScope scope(allocator, "b");
  void* from_b = allocator.allocate(8 * MiB);
  EXPECT_NE(from_b, from_a);
  allocator.deallocate(from_b);
}

TEST_P(Pool, QuotaIsEnforcedAndNamesThePool) {
  Allocator allocator(device());
  allocator.create_pool("small_model", 64 * MiB);
  PoolScope scope(allocator, "small_model");
  void* a = allocator.allocate(40 * MiB);
  try {
    allocator.allocate(40 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.pool(), "small_model");
    EXPECT_NE(std::string(e.what()).find("quota"), std::string::npos) << e.what();
  }
  allocator.deallocate(a);
  void* b = allocator.allocate(60 * MiB);  // reclaims its own cache to fit the quota
  EXPECT_LE(allocator.pools()[1].stats.reserved_bytes.all.current,
            static_cast<std::int64_t>(64 * MiB));
  allocator.deallocate(b);
}

// The advice names a quota that serves the request: 8.01 MiB (live bytes and request)
// was advised, and a pool made with it failed the same way, in whole granules.
TEST_P(Pool, TheQuotaAdvisedServesTheRequest) {
  for (const char* strategy : {"strategy:caching", "strategy:expandable"}) {
    const auto run = [&](std::uint64_t quota) {
      Allocator allocator(device(), parse_config(strategy));
      allocator.create_pool("enc", quota);
      PoolScope scope(allocator, "enc");
      void* a = allocator.allocate(4 * MiB + 8 * KiB);
      void* b = allocator.allocate(4 * MiB);
      allocator.deallocate(b);
      allocator.deallocate(a);
    };
    std::string message;
    try {
      run(8 * MiB);
    } catch (const OutOfMemory& e) {
      message = e.what();
    }
    const std::string said = "this request needs a quota of ";
    const std::size_t at = message.find(said);
    ASSERT_NE(at, std::string::npos) << strategy << ": " << message;
    const std::string figure = message.substr(at + said.size());
    const std::uint64_t advised = parse_size(figure.substr(0, figure.find(" (")));
    EXPECT_GT(advised, 8 * MiB) << strategy;
    EXPECT_NO_THROW(run(advised)) << strategy << ": " << message;
  }
}

// Under a quota that cannot hold the preferred 20 MiB segment, the segment holds a whole
// number of the request: halving alone gave the first 4 MiB tensor of an 8 MiB quota a
// 6 MiB segment and the second none, and a 10 MiB quota to one segment, leaving no
// room for a small tensor's segment.
TEST_P(Pool, TensorsThatFillTheQuotaFitIt) {
  Allocator allocator(device());
  allocator.create_pool("eight", 8 * MiB);
  allocator.create_pool("twelve", 12 * MiB);
  allocator.create_pool("ten", 10 * MiB);
  std::vector<void*> held;
  {
    PoolScope scope(allocator, "eight");
    for (int i = 0; i < 2; ++i) held.push_back(allocator.allocate(4 * MiB));
  }
  {
    PoolScope scope(allocator, "twelve");
    for (int i = 0; i < 3; ++i) held.push_back(allocator.allocate(4 * MiB));
  }
  {
    PoolScope scope(allocator, "ten");
    for (int i = 0; i < 2; ++i) held.push_back(allocator.allocate(4 * MiB));
    held.push_back(allocator.allocate(8 * KiB));
  }
  // A segment that fits the quota but fills it: a 2 MiB tensor took all of a 20 MiB
  // quota, and the pool's first small tensor had no room for its segment.
  allocator.create_pool("twenty", 20 * MiB);
  {
    PoolScope scope(allocator, "twenty");
    held.push_back(allocator.allocate(2 * MiB));
    held.push_back(allocator.allocate(4 * KiB));
    for (int i = 0; i < 4; ++i) held.push_back(allocator.allocate(2 * MiB));
  }
  for (const PoolInfo& pool : allocator.pools()) {
    if (pool.name == "default") continue;
    EXPECT_LE(pool.stats.reserved_bytes.all.current, static_cast<std::int64_t>(pool.quota_bytes))
        << pool.name;
  }
  for (void* p : held) allocator.deallocate(p);
}

TEST_P(Pool, QuotaHoldsUnderTwoThreads) {
  Allocator allocator(device());
  allocator.create_pool("capped", 96 * MiB);
  std::atomic<std::int64_t> ooms{0};
  auto work = [&] {
    PoolScope scope(allocator, "capped");
    for (int i = 0; i < 300; ++i) {
      try {
        void* p = allocator.allocate((1 + i % 7) * 3 * MiB);
        allocator.deallocate(p);
      } catch (const OutOfMemory&) {
        ++ooms;
      }
    }
  };
  // This thread's cache first: however the two below interleave, theirs is a second
  // one, which works without the allocator's lock.
  allocator.deallocate(allocator.allocate(1));
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  const PoolInfo capped = allocator.pools()[1];
  EXPECT_LE(capped.stats.reserved_bytes.all.peak, static_cast<std::int64_t>(96 * MiB));
  EXPECT_EQ(capped.stats.num_ooms, ooms.load());
  EXPECT_EQ(capped.stats.allocated_bytes.all.current, 0);
}

TEST_P(Pool, UnknownAndDuplicatePoolsAreErrors) {
  Allocator allocator(device());
  EXPECT_THROW(PoolScope(allocator, "nope"), ConfigError);
  allocator.create_pool("x");
  EXPECT_THROW(allocator.create_pool("x"), ConfigError);
  EXPECT_THROW(allocator.create_pool(""), ConfigError);
}

// Memory comes in granules: a quota below the least of them could never hold a byte.
TEST_P(Pool, AQuotaBelowOneGranuleIsRefused) {
  Allocator allocator(device());
  const std::size_t granule = allocator.device().tier_info(Tier::hbm).granularity_bytes;
  try {
    allocator.create_pool("tiny", granule / 2);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pool 'tiny': a quota of"), std::string::npos) << e.what();
  }
  allocator.create_pool("one_granule", granule);
}

// A model unloaded from a server: its pool's memory goes back, static arena included,
// and the name takes another quota. Under every strategy.
TEST_P(Pool, ARemovedPoolGivesBackItsMemoryAndItsName) {
  for (const char* conf : {"strategy:caching", "strategy:expandable", "strategy:planned",
                           "strategy:static,static_size:4MiB"}) {
    SCOPED_TRACE(conf);
    Allocator allocator(device(), parse_config(conf));
    const std::int64_t before = allocator.stats().reserved_bytes.all.current;
    allocator.create_pool("model_a", 64 * MiB);
    void* freed = nullptr;
    {
      PoolScope scope(allocator, "model_a");
      void* small = allocator.allocate(4 * KiB);
      freed = allocator.allocate(6 * MiB);
      allocator.deallocate(small);
      allocator.deallocate(freed);
    }
    EXPECT_GT(allocator.stats().reserved_bytes.all.current, before) << "the pool holds memory";
    const std::int64_t device_frees = allocator.stats().num_device_free;
    const std::size_t released = allocator.remove_pool("model_a");
    try {
      allocator.deallocate(freed);
      ADD_FAILURE() << "a pointer of a removed pool freed again";
    } catch (const InvalidPointer& error) {
      EXPECT_NE(std::string(error.what()).find("or was freed and its memory given back since"),
                std::string::npos)
          << error.what();
    }
    EXPECT_GT(released, 0u);
    EXPECT_EQ(allocator.stats().reserved_bytes.all.current, before);
    EXPECT_GT(allocator.stats().num_device_free, device_frees);
    ASSERT_EQ(allocator.pools().size(), 1u);
    EXPECT_EQ(allocator.pools()[0].name, "default");
    allocator.create_pool("model_a", 32 * MiB);
    {
      PoolScope scope(allocator, "model_a");
      allocator.deallocate(allocator.allocate(1 * MiB));
    }
    EXPECT_EQ(allocator.pools()[1].quota_bytes, 32 * MiB);
  }
}

// Refused, with nothing changed: the default pool, an unknown one, one with live
// allocations (named), one a scope routes to on another thread.
TEST_P(Pool, APoolInUseIsNotRemoved) {
  Allocator allocator(device());
  allocator.create_pool("model_a", 0);
  const auto refused = [&](const std::string& name, const std::string& reason) {
    try {
      allocator.remove_pool(name);
      ADD_FAILURE() << "removed " << name;
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find(reason), std::string::npos) << error.what();
    }
  };
  refused("default", "the default pool cannot be removed");
  refused("model_b", "unknown pool 'model_b'");
  void* live = nullptr;
  {
    PoolScope scope(allocator, "model_a");
    live = allocator.allocate(3 * MiB);
    refused("model_a", "a pool scope routes allocations to it");
  }
  refused("model_a", "holds 1 live allocation (3.00 MiB); free them before removing it");
  std::atomic<bool> entered{false}, leave{false};
  std::thread user([&] {
    PoolScope scope(allocator, "model_a");
    entered = true;
    while (!leave) std::this_thread::yield();
  });
  while (!entered) std::this_thread::yield();
  allocator.deallocate(live);
  refused("model_a", "a pool scope routes allocations to it");
  leave = true;
  user.join();
  EXPECT_EQ(allocator.pools().size(), 2u);
  allocator.remove_pool("model_a");
  EXPECT_EQ(allocator.pools().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Devices, Pool, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
