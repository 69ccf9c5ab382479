#include "npumem/hooks.h"

#include <gtest/gtest.h>

#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(Hooks, CallsEachCallbackForItsKindsOnly) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto hooks = std::make_shared<Hooks>();
  allocator.add_observer(hooks);
  std::vector<std::uint64_t> allocs;
  std::vector<std::uint64_t> frees;
  std::vector<EventKind> segments;
  std::vector<std::uint64_t> ooms;
  hooks->on_alloc([&](const Event& e) { allocs.push_back(e.requested_bytes); });
  hooks->on_free([&](const Event& e) { frees.push_back(e.requested_bytes); });
  hooks->on_segment([&](const Event& e) { segments.push_back(e.kind); });
  hooks->on_oom([&](const Event& e) { ooms.push_back(e.requested_bytes); });

  void* p = allocator.allocate(1000);
  allocator.deallocate(p);
  EXPECT_THROW(allocator.allocate(100 * MiB), OutOfMemory);
  allocator.empty_cache();

  EXPECT_EQ(allocs, std::vector<std::uint64_t>{1000});
  EXPECT_EQ(frees, std::vector<std::uint64_t>{1000});
  EXPECT_EQ(segments, (std::vector<EventKind>{EventKind::segment_alloc, EventKind::segment_free}));
  EXPECT_EQ(ooms, std::vector<std::uint64_t>{100 * MiB});
}

TEST(Hooks, AddTakesAnyKindsAndRemoveStopsTheCalls) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto hooks = std::make_shared<Hooks>();
  allocator.add_observer(hooks);
  int calls = 0;
  const Hooks::Id id =
      hooks->add({EventKind::alloc, EventKind::free}, [&](const Event&) { ++calls; });
  allocator.deallocate(allocator.allocate(512));
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(hooks->remove(id));
  EXPECT_FALSE(hooks->remove(id));
  allocator.deallocate(allocator.allocate(512));
  EXPECT_EQ(calls, 2);
}

TEST(Hooks, ACallbackMayRemoveItself) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto hooks = std::make_shared<Hooks>();
  allocator.add_observer(hooks);
  int calls = 0;
  Hooks::Id id = 0;
  id = hooks->on_alloc([&](const Event&) {
    ++calls;
    hooks->remove(id);
  });
  allocator.deallocate(allocator.allocate(512));
  allocator.deallocate(allocator.allocate(512));
  EXPECT_EQ(calls, 1);
}

TEST(Hooks, SeesTheTagAndPoolOfTheAllocation) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  allocator.create_pool("kv");
  auto hooks = std::make_shared<Hooks>();
  allocator.add_observer(hooks);
  std::string seen;
  hooks->on_alloc([&](const Event& e) { seen = std::string(e.pool) + "/" + std::string(e.tag); });
  PoolScope scope(allocator, "kv");
  ScopedMemoryTag tag("decoder.3");
  void* p = allocator.allocate(512);
  EXPECT_EQ(seen, "kv/decoder.3");
  allocator.deallocate(p);
}

}  // namespace
}  // namespace npumem
