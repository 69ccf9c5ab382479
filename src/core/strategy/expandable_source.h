// The expandable strategy: per pool, tier and kind one reserved virtual range (one
// per pool and tier when both kinds have the same granule, as by default);
// physical memory is created in granules and mapped where the pool needs it. A
// large request with no contiguous free block first takes whole free granules from
// anywhere in the range and maps them side by side in an unmapped stretch
// ("stitching", as in GMLake), creating new physical memory only for the rest.
// Reclaim unmaps whole free granules and releases their memory, and gives back a range
// left with nothing mapped.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "core/strategy/segment_source.h"
#include "npumem/allocator.h"

namespace npumem::core {

class ExpandableSource : public SegmentSource {
 public:
  // may_give_back(): whether a range left with nothing mapped may be given back now
  // (the planned strategy's plans can hold addresses in it).
  explicit ExpandableSource(
      Allocator::Impl& allocator, std::function<bool()> may_give_back = [] { return true; })
      : allocator_(allocator),
        may_give_back_(std::move(may_give_back)),
        one_range_(kinds_share_granules(allocator)) {}
  GrowResult grow(PoolState& pool, BlockPool& blocks, std::size_t size) override;
  std::size_t release(PoolState& pool, BlockPool& blocks) override;
  void release_all(PoolState& pool, BlockPool& blocks) override;
  std::size_t release_removed(PoolState& pool, BlockPool& blocks) override;
  PoolKind kind_for(std::size_t size) const override;
  std::size_t mapping_granule(Tier tier, std::size_t size) const override;
  // Maps the granules right after `free` (a free mapped block of `blocks` followed by
  // an unmapped one) that it lacks to hold `size` bytes from its start. The planned
  // strategy's placement, where it chooses the place.
  GrowResult grow_after(PoolState& pool, BlockPool& blocks, const Block& free, std::size_t size);
  // Maps the granules at the start of `unmapped`, a block of `blocks`, that hold `size` bytes.
  GrowResult grow_into(PoolState& pool, BlockPool& blocks, Block& unmapped, std::size_t size);
  // At most the bytes of new physical memory a block of `size` would map now: 0 when a
  // free mapped block holds it, else the granules grow() would map (free ones of the
  // range it takes over cost none). The planned strategy's test of a carved arena.
  std::size_t bytes_to_grow(const BlockPool& blocks, std::size_t size) const;
  // The bytes release() would give back now: the whole free granules of `blocks`.
  std::size_t releasable_bytes(const BlockPool& blocks) const;
  // The granule of the range `blocks` has or would get.
  std::size_t granule_for(const BlockPool& blocks) const;
  std::size_t granule_of(Tier tier, PoolKind kind) const;

 private:
  struct Range {
    std::uintptr_t base = 0;
    std::size_t size = 0;
    std::size_t granule = 0;
    // By granule index, as far as the highest granule mapped so far; empty handle:
    // unmapped. Grown on demand: sized for the whole range (twice the tier) up front,
    // its zeroing page-faulted 250-350 us into an allocator's first allocation.
    std::vector<PhysicalHandle> chunks;
  };

  // Where new granules go: an unmapped block and the first address to map there, so
  // that the free mapped blocks on either side of it count towards the request.
  struct Placement {
    Block* unmapped = nullptr;  // nullptr: any unmapped stretch that holds `granules`
    std::uintptr_t start = 0;
    std::size_t granules = 0;
  };

  // A stretch of whole free granules inside the free block `block`.
  struct FreeRun {
    Block* block;
    std::uintptr_t start;
    std::size_t bytes;
  };

  static bool kinds_share_granules(const Allocator::Impl& allocator);
  Range* range_for(PoolState& pool, BlockPool& blocks);
  // Gives back the range of `blocks` when nothing in it is mapped (and it is whole).
  void release_if_empty(PoolState& pool, BlockPool& blocks, const Range& range);
  Placement placement(const BlockPool& blocks, const Range& range, std::size_t size) const;
  GrowResult grow_at(PoolState& pool, BlockPool& blocks, Range& range, const Placement& place);
  // Unmaps one whole free granule of `donor` and hands over its chunk, re-accounting
  // its bytes to `taker` when that is the sibling pool kind.
  // From its own range, never takes from a block next to `keep_beside` (the placement's
  // unmapped block), so the placement stays as it was chosen.
  bool take_free_granule(PoolState& pool, BlockPool& donor, const BlockPool& taker,
                         const Block* keep_beside, PhysicalHandle* out);
  // A free mapped block of `blocks` holding a whole granule, or nullptr. In the growing
  // pool's own range (own_range) not one next to `keep_beside`; when that is null, not
  // one at either end of the range (where the planned strategy's arena, joined to the
  // range, is carved again without device calls). In the other kind's range, any.
  Block* granule_donor(BlockPool& blocks, const Range& range, const Block* keep_beside,
                       bool own_range) const;
  // The start of the first whole granule inside a free block (or its end when none).
  static std::uintptr_t first_whole_granule(const Range& range, const Block& block);
  // Every free block's whole granules, found from the free index (no walk of the range).
  std::vector<FreeRun> free_runs(const BlockPool& blocks, const Range& range) const;
  GrowResult new_granule(PoolState& pool, BlockPool& blocks, Range& range, PhysicalHandle* out);
  void drop_chunk(PoolState& pool, BlockPool& blocks, PhysicalHandle handle);
  // The planned strategy keeps its arena in the same block pool: a device segment, or
  // a segment carved out of the range, whose granules are the arena's.
  static bool in_range(const Range& range, const Block& block) {
    return block.address >= range.base && block.address < range.base + range.size &&
           !block.segment->carved;
  }
  std::size_t granule_index(const Range& range, std::uintptr_t address) const {
    return (address - range.base) / range.granule;
  }

  Allocator::Impl& allocator_;
  std::function<bool()> may_give_back_;
  // Both kinds in one range: their granules are equal once rounded (as by default).
  const bool one_range_;
  std::map<const BlockPool*, Range> ranges_;
};

}  // namespace npumem::core
