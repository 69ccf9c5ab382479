// Differential fuzzer of the allocator: random sequences of allocate, free, resize,
// empty_cache, pool creation and double frees, on a simulated device with injected
// faults, under every strategy, checked after each step against a reference model
// (the live allocations and their requested sizes) and the snapshot's own layout.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/sim/sim_device.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace {

using npumem::GiB;
using npumem::MiB;

[[noreturn]] void violated(const char* what, int line) {
  std::fprintf(stderr, "fuzz_allocator: invariant broken at line %d: %s\n", line, what);
  std::abort();
}

#define CHECK(condition) \
  if (!(condition)) violated(#condition, __LINE__)

struct Live {
  std::size_t requested = 0;
  std::string pool;
};

// What must hold: the reference's live set is exactly the allocator's, sizes and
// stats agree, blocks never overlap, reservations stay within the device and quotas.
void check_model(npumem::Allocator& allocator, const std::map<void*, Live>& live,
                 std::uint64_t device_bytes) {
  const npumem::Stats stats = allocator.stats();
  std::int64_t requested = 0;
  for (const auto& [ptr, entry] : live) {
    CHECK(allocator.allocation_size(ptr) == entry.requested);
    requested += static_cast<std::int64_t>(entry.requested);
  }
  CHECK(stats.requested_bytes.all.current == requested);
  CHECK(stats.allocation.all.current == static_cast<std::int64_t>(live.size()));
  CHECK(stats.reserved_bytes.all.current >= stats.allocated_bytes.all.current);
  CHECK(static_cast<std::uint64_t>(stats.reserved_bytes.all.current) <= device_bytes);

  std::map<std::uint64_t, std::uint64_t> allocated_blocks;  // address -> size
  std::int64_t allocated = 0;
  for (const npumem::SegmentInfo& segment : allocator.snapshot()) {
    std::uint64_t at = segment.address;
    for (const npumem::BlockInfo& block : segment.blocks) {
      CHECK(block.address == at);  // blocks tile their segment in order
      at += block.size;
      if (!block.allocated) continue;
      allocated_blocks[block.address] = block.size;
      allocated += static_cast<std::int64_t>(block.size);
    }
    CHECK(at == segment.address + segment.size);
  }
  CHECK(allocated == stats.allocated_bytes.all.current);
  CHECK(allocated_blocks.size() == live.size());
  for (const auto& [ptr, entry] : live) {
    const auto found = allocated_blocks.find(reinterpret_cast<std::uint64_t>(ptr));
    CHECK(found != allocated_blocks.end());
    CHECK(found->second >= entry.requested);
  }
  for (const npumem::PoolInfo& pool : allocator.pools()) {
    if (pool.quota_bytes == 0) continue;
    CHECK(static_cast<std::uint64_t>(pool.stats.reserved_bytes.all.current) <= pool.quota_bytes);
  }
}

std::size_t request_size(FuzzedDataProvider& data) {
  switch (data.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return data.ConsumeIntegralInRange<std::size_t>(0, 4096);
    case 1:
      return data.ConsumeIntegralInRange<std::size_t>(4096, 1 * MiB);
    case 2:
      return data.ConsumeIntegralInRange<std::size_t>(1 * MiB, 24 * MiB);
    default:
      return data.ConsumeIntegralInRange<std::size_t>(24 * MiB, 300 * MiB);
  }
}

npumem::SimSpec device_spec(FuzzedDataProvider& data) {
  npumem::SimSpec spec;
  spec.hbm_bytes = data.PickValueInArray({8 * MiB, 64 * MiB, 256 * MiB});
  spec.ddr_bytes = data.PickValueInArray({std::uint64_t{0}, 32 * MiB});
  if (data.ConsumeBool()) {
    spec.faults.every = data.ConsumeIntegralInRange<std::uint64_t>(2, 9);
    spec.faults.ops = data.ConsumeIntegralInRange<std::uint8_t>(1, npumem::kAllFaultOps);
  }
  return spec;
}

npumem::Config allocator_config(FuzzedDataProvider& data) {
  npumem::Config config;
  config.strategy = data.PickValueInArray(
      {npumem::Strategy::caching, npumem::Strategy::expandable, npumem::Strategy::static_arena});
  config.static_size = data.PickValueInArray({std::uint64_t{0}, 4 * MiB, 32 * MiB});
  config.static_fallback = data.ConsumeBool();
  config.spill_to_ddr = data.ConsumeBool();
  if (data.ConsumeBool()) config.max_split_size = data.ConsumeIntegralInRange(1 * MiB, 64 * MiB);
  if (data.ConsumeBool()) config.garbage_collection_threshold = 0.5;
  if (data.ConsumeBool()) config.expandable_large_granule = 4 * MiB;
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  FuzzedDataProvider data(bytes, size);
  const npumem::SimSpec spec = device_spec(data);
  auto device = std::make_shared<npumem::SimDevice>(spec);
  {
    std::unique_ptr<npumem::Allocator> made;
    try {
      made = std::make_unique<npumem::Allocator>(device, allocator_config(data));
    } catch (const npumem::Error&) {
      return 0;  // e.g. a static arena the device cannot hold
    }
    npumem::Allocator& allocator = *made;
    std::map<void*, Live> live;
    std::vector<void*> freed;
    std::vector<std::string> pools = {"default"};
    const std::uint64_t device_bytes = spec.hbm_bytes + spec.ddr_bytes;
    for (int step = 0; step < 256 && data.remaining_bytes() > 0; ++step) {
      switch (data.ConsumeIntegralInRange(0, 5)) {
        case 0: {
          const std::string pool =
              pools[data.ConsumeIntegralInRange<std::size_t>(0, pools.size() - 1)];
          npumem::PoolScope scope(allocator, pool);
          const std::size_t request = request_size(data);
          const npumem::Stats before = allocator.stats();
          try {
            void* ptr = allocator.allocate(request);
            CHECK(live.find(ptr) == live.end());
            live[ptr] = {request, pool};
          } catch (const npumem::OutOfMemory&) {
            const npumem::Stats after = allocator.stats();
            CHECK(after.allocated_bytes.all.current == before.allocated_bytes.all.current);
            CHECK(after.num_ooms == before.num_ooms + 1);
          }
          break;
        }
        case 1:
          if (!live.empty()) {
            auto it = std::next(live.begin(), data.ConsumeIntegralInRange<std::ptrdiff_t>(
                                                  0, static_cast<std::ptrdiff_t>(live.size()) - 1));
            allocator.deallocate(it->first);
            freed.push_back(it->first);
            live.erase(it);
          }
          break;
        case 2:
          if (!live.empty()) {
            auto it = std::next(live.begin(), data.ConsumeIntegralInRange<std::ptrdiff_t>(
                                                  0, static_cast<std::ptrdiff_t>(live.size()) - 1));
            const std::size_t request = request_size(data);
            if (allocator.resize(it->first, request)) it->second.requested = request;
          }
          break;
        case 3: {
          const std::int64_t allocated = allocator.stats().allocated_bytes.all.current;
          allocator.empty_cache();
          CHECK(allocator.stats().allocated_bytes.all.current == allocated);
          break;
        }
        case 4:
          // A pointer freed before and not handed out again: freeing it is refused.
          if (!freed.empty()) {
            void* ptr = freed[data.ConsumeIntegralInRange<std::size_t>(0, freed.size() - 1)];
            if (live.find(ptr) == live.end()) {
              const npumem::Stats before = allocator.stats();
              bool refused = false;
              try {
                allocator.deallocate(ptr);
              } catch (const npumem::InvalidPointer&) {
                refused = true;
              }
              CHECK(refused);
              CHECK(allocator.stats().allocated_bytes.all.current ==
                    before.allocated_bytes.all.current);
            }
          }
          break;
        default:
          if (pools.size() < 4) {
            const std::string name = "pool" + std::to_string(pools.size());
            try {
              allocator.create_pool(name, data.PickValueInArray({std::uint64_t{0}, 19 * MiB,
                                                                 std::uint64_t{40 * MiB}}));
              pools.push_back(name);
            } catch (const npumem::Error&) {
              // The static strategy needs a quota and reserves the pool's arena up
              // front; a refused pool leaves nothing behind.
              CHECK(allocator.pools().size() == pools.size());
            }
          }
          break;
      }
      check_model(allocator, live, device_bytes);
    }
    for (const auto& [ptr, entry] : live) allocator.deallocate(ptr);
    allocator.empty_cache();
    CHECK(allocator.stats().allocated_bytes.all.current == 0);
  }
  // The allocator gone, every byte is back with the device.
  CHECK(device->tier_info(npumem::Tier::hbm).used_bytes == 0);
  CHECK(device->tier_info(npumem::Tier::ddr).used_bytes == 0);
  return 0;
}
