// Blocks and segments: the allocator's record of device memory. Blocks of one
// segment form a doubly linked list in address order that covers it exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "npumem/device.h"
#include "npumem/stats.h"

namespace npumem::core {

struct Segment;
struct PoolState;
class ThreadCache;

// Cache lines of its own (two): the front caches of two threads write their own
// blocks on every call, and blocks that shared lines made two threads together
// 0.5-1.5x one thread's pairs per second (1.8-2.05x apart; bench/alloc_bench.cc, mixed
// row). The price: 128 bytes a block, not 104, and a lone thread's churn over 10^6
// live blocks 25 -> 32 ns per operation (steady row; fields reordered so that a hit
// touches one line of each block were slower still, 39 ns).
struct alignas(64) Block {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested = 0;  // caller's bytes while allocated
  Block* prev = nullptr;      // address neighbours in the segment
  Block* next = nullptr;
  Block* free_prev = nullptr;  // links in a free-index bucket
  Block* free_next = nullptr;
  Segment* segment = nullptr;
  // The front cache whose thread allocated it, while live or kept by that cache.
  ThreadCache* owner = nullptr;
  StreamId stream = 0;          // the stream it was last allocated on
  std::uint32_t tag = 0;        // interned memory tag (0: none)
  std::uint32_t tree_node = 0;  // its node in an address index (address_index.h), if any
  // Planned strategy: the iteration (high 32 bits) and request index that made it.
  std::uint64_t sequence = 0;
  bool allocated = false;
  bool cached = false;  // kept by its owner's front cache: free to users, taken to the pools
  // Free blocks of an expandable range may have no physical memory behind them;
  // allocated blocks are always mapped.
  bool mapped = true;
};

struct Segment {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  Tier tier = Tier::hbm;
  PoolKind kind = PoolKind::large;
  PoolState* pool = nullptr;
  Block* first = nullptr;
  std::size_t allocated_blocks = 0;
  // Its free blocks serve only BlockPool::take_at (the planned arena while plans serve).
  bool closed = false;
  // Where its granules begin: its address, or the expandable range's it was split from.
  std::uintptr_t granule_base = 0;
  // The planned arena, split from an expandable range (BlockPool::split_segment): its
  // granules are the arena's, not the range's to unmap or hand over.
  bool carved = false;
  Segment* prev = nullptr;  // links in the owning block pool's segment list
  Segment* next = nullptr;
  Segment* idle_prev = nullptr;  // links in its list of segments with no allocated block
  Segment* idle_next = nullptr;
};

}  // namespace npumem::core
