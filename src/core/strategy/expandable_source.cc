#include "core/strategy/expandable_source.h"

#include <algorithm>

#include "core/allocator_impl.h"
#include "core/pool/align.h"

namespace npumem::core {

namespace {
constexpr std::size_t kMinRangeBytes = std::size_t{1} << 30;
}  // namespace

// With one granule for both kinds (the default), one range serves every size: a small
// block then fills the free part of a granule a large block left, where a separate
// small range would map a granule of its own.
PoolKind ExpandableSource::kind_for(std::size_t size) const {
  if (one_range_) return PoolKind::large;
  return size <= allocator_.config.small_size ? PoolKind::small : PoolKind::large;
}

// The granules as mapped: rounded up to each tier's granularity.
bool ExpandableSource::kinds_share_granules(const Allocator::Impl& allocator) {
  const Config& config = allocator.config;
  for (const Tier tier : kAllTiers) {
    if (allocator.device->has_tier(tier) &&
        round_up(config.expandable_small_granule, allocator.granularity(tier)) !=
            round_up(config.expandable_large_granule, allocator.granularity(tier))) {
      return false;
    }
  }
  return true;
}

std::size_t ExpandableSource::granule_for(const BlockPool& blocks) const {
  return granule_of(blocks.tier(), blocks.kind());
}

std::size_t ExpandableSource::mapping_granule(Tier tier, std::size_t size) const {
  return granule_of(tier, kind_for(size));
}

std::size_t ExpandableSource::granule_of(Tier tier, PoolKind kind) const {
  const Config& config = allocator_.config;
  return round_up(
      kind == PoolKind::small ? config.expandable_small_granule : config.expandable_large_granule,
      allocator_.granularity(tier));
}

ExpandableSource::Range* ExpandableSource::range_for(PoolState& pool, BlockPool& blocks) {
  if (auto found = ranges_.find(&blocks); found != ranges_.end()) return &found->second;
  const Tier tier = blocks.tier();
  Range range;
  range.granule = granule_for(blocks);
  // Twice what it may map: stitched granules leave holes behind them. A pool with a quota
  // maps no more than it (2x the tier each, 1022 pools used up a process's 128 TiB). At
  // least kMinRangeBytes: on an 11 MiB limit, 22 MiB of addresses held no free stretch
  // for a 4.9 MiB request beside 5.6 MiB mapped, and the refusal read as the device's.
  std::size_t may_map = allocator_.limit(tier);
  if (pool.quota_bytes != 0) may_map = std::min<std::size_t>(may_map, pool.quota_bytes);
  range.size = round_up(std::max({2 * may_map, kMinRangeBytes, range.granule}), range.granule);
  void* base = nullptr;
  if (allocator_.device->reserve_address(range.size, &base) != DeviceStatus::ok) return nullptr;
  range.base = reinterpret_cast<std::uintptr_t>(base);
  blocks.add_segment(range.base, range.size, false);
  blocks.set_mapping_granule(range.granule);
  allocator_.add_segments(pool, tier, blocks.kind(), 1, range.size);
  return &ranges_.emplace(&blocks, std::move(range)).first->second;
}

std::uintptr_t ExpandableSource::first_whole_granule(const Range& range, const Block& block) {
  return range.base + round_up(block.address - range.base, range.granule);
}

Block* ExpandableSource::granule_donor(BlockPool& blocks, const Range& range,
                                       const Block* keep_beside, bool own_range) const {
  // The other kind's range: its first block too (it was kept as if beside a null
  // placement, and a declined plan's small range held 4 MiB free and mapped while the
  // large one mapped new granules: 18 MiB where expandable alone reserved 12).
  const auto kept = [&](const Block& b) {
    return own_range && (b.next == keep_beside || b.prev == keep_beside);
  };
  const auto holds_granule = [&](const Block& b) {
    return in_range(range, b) && !b.allocated && b.mapped && !kept(b) &&
           first_whole_granule(range, b) + range.granule <= b.address + b.size;
  };
  Block* largest = blocks.largest_free_block();
  if (largest == nullptr || largest->size < range.granule) return nullptr;
  if (holds_granule(*largest)) return largest;
  // Only free blocks of a granule or more can hold one: no walk of the whole range.
  return blocks.find_free(range.granule, holds_granule);
}

bool ExpandableSource::take_free_granule(PoolState& pool, BlockPool& donor, const BlockPool& taker,
                                         const Block* keep_beside, PhysicalHandle* out) {
  const auto found = ranges_.find(&donor);
  if (found == ranges_.end()) return false;
  Range& range = found->second;
  Block* block = granule_donor(donor, range, keep_beside, &donor == &taker);
  if (block == nullptr) return false;
  const std::uintptr_t start = first_whole_granule(range, *block);
  const std::size_t index = granule_index(range, start);
  allocator_.device->unmap(reinterpret_cast<void*>(start), range.granule);
  allocator_.notify(EventKind::unmap, start, range.granule, 0, donor.tier(), pool);
  donor.unmap_range(block, start, range.granule);
  *out = range.chunks[index];
  range.chunks[index] = {};
  if (&donor != &taker) {
    const auto bytes = static_cast<std::int64_t>(range.granule);
    allocator_.add_reserved(pool, donor.tier(), donor.kind(), -bytes);
    allocator_.add_reserved(pool, taker.tier(), taker.kind(), bytes);
  }
  return true;
}

GrowResult ExpandableSource::new_granule(PoolState& pool, BlockPool& blocks, Range& range,
                                         PhysicalHandle* out) {
  const Tier tier = blocks.tier();
  if (const GrowResult admitted = allocator_.admit(pool, tier, range.granule);
      admitted != GrowResult::ok) {
    return admitted;
  }
  if (allocator_.device->create_physical(tier, range.granule, out) != DeviceStatus::ok) {
    return GrowResult::device_refused;
  }
  allocator_.count_device_call(pool, true);
  allocator_.add_reserved(pool, tier, blocks.kind(), static_cast<std::int64_t>(range.granule));
  return GrowResult::ok;
}

void ExpandableSource::drop_chunk(PoolState& pool, BlockPool& blocks, PhysicalHandle handle) {
  const Range& range = ranges_.at(&blocks);
  allocator_.device->release_physical(handle);
  allocator_.count_device_call(pool, false);
  allocator_.add_reserved(pool, blocks.tier(), blocks.kind(),
                          -static_cast<std::int64_t>(range.granule));
}

// New granules next to free mapped blocks need only the bytes those lack: mapping the
// front of an unmapped stretch extends the free block before it, mapping its back
// extends the one after it, and mapping all of it joins both. The fewest granules win,
// so a request never leaves a whole free neighbour beside its new granules.
ExpandableSource::Placement ExpandableSource::placement(const BlockPool& blocks, const Range& range,
                                                        std::size_t size) const {
  const auto granules_for = [&](std::size_t bytes) {
    return round_up(bytes, range.granule) / range.granule;
  };
  const auto free_bytes = [](const Block* b) {
    return b != nullptr && !b->allocated && b->mapped ? b->size : 0;
  };
  Placement best{nullptr, 0, granules_for(size)};
  blocks.find_unmapped_if(range.granule, [&](Block& unmapped) {
    const std::size_t before = free_bytes(unmapped.prev);
    const std::size_t after = free_bytes(unmapped.next);
    const std::size_t fits = unmapped.size / range.granule;
    const auto consider = [&](std::size_t granules, std::uintptr_t start) {
      const bool better =
          granules < best.granules || (granules == best.granules && best.unmapped == nullptr);
      if (granules <= fits && better) best = {&unmapped, start, granules};
    };
    // A neighbour that holds the whole request would have served it (the pool's
    // max_split rules keep such blocks for requests of their own size).
    if (before >= size || after >= size) return false;
    if (before != 0) consider(granules_for(size - before), unmapped.address);
    if (after != 0) {
      const std::size_t granules = granules_for(size - after);
      consider(granules, unmapped.address + unmapped.size - granules * range.granule);
    }
    if (before != 0 && after != 0 && before + unmapped.size + after >= size) {
      consider(fits, unmapped.address);
    }
    return false;  // visit them all: few unmapped stretches exist
  });
  return best;
}

// Gathers the chunks first (free granules, then new ones), then finds the unmapped
// stretch, then maps: a failure at any step leaves every block either mapped with
// its chunk or unmapped, and releases the chunks it could not place.
GrowResult ExpandableSource::grow(PoolState& pool, BlockPool& blocks, std::size_t size) {
  Range* range = range_for(pool, blocks);
  if (range == nullptr) return GrowResult::address_space_refused;
  return grow_at(pool, blocks, *range, placement(blocks, *range, size));
}

GrowResult ExpandableSource::grow_after(PoolState& pool, BlockPool& blocks, const Block& free,
                                        std::size_t size) {
  const auto found = ranges_.find(&blocks);
  Block* unmapped = free.next;
  if (found == ranges_.end() || free.allocated || !free.mapped || free.size >= size ||
      unmapped == nullptr || unmapped->mapped) {
    return GrowResult::device_refused;
  }
  return grow_into(pool, blocks, *unmapped, size - free.size);
}

GrowResult ExpandableSource::grow_into(PoolState& pool, BlockPool& blocks, Block& unmapped,
                                       std::size_t size) {
  const auto found = ranges_.find(&blocks);
  if (found == ranges_.end() || unmapped.mapped) return GrowResult::device_refused;
  Range& range = found->second;
  const std::size_t granules = round_up(size, range.granule) / range.granule;
  if (granules * range.granule > unmapped.size) return GrowResult::device_refused;
  return grow_at(pool, blocks, range, {&unmapped, unmapped.address, granules});
}

std::size_t ExpandableSource::bytes_to_grow(const BlockPool& blocks, std::size_t size) const {
  if (const Block* largest = blocks.largest_free_block();
      largest != nullptr && largest->size >= size) {
    return 0;
  }
  const auto found = ranges_.find(&blocks);
  if (found == ranges_.end()) return round_up(size, granule_for(blocks));  // all of it new
  return placement(blocks, found->second, size).granules * found->second.granule;
}

GrowResult ExpandableSource::grow_at(PoolState& pool, BlockPool& blocks, Range& range,
                                     const Placement& place) {
  const std::size_t count = place.granules;
  // Granule by granule, a request past the tier would map all of it before failing.
  if (!allocator_.tier_could_hold(blocks.tier(), count * range.granule)) {
    return GrowResult::limit_refused;
  }
  BlockPool& sibling = pool.block_pool(
      blocks.tier(), blocks.kind() == PoolKind::small ? PoolKind::large : PoolKind::small);
  // Likewise the quota and the limit: refused for the granules that free ones cannot
  // stand in for, before any is made (one made and given back raised the peaks). Free
  // granules are counted only when the whole growth would be refused.
  if (const std::size_t bytes = count * range.granule;
      allocator_.admit(pool, blocks.tier(), bytes) != GrowResult::ok) {
    const std::size_t free_bytes = releasable_bytes(blocks) + releasable_bytes(sibling);
    if (bytes > free_bytes) {
      if (const GrowResult admitted = allocator_.admit(pool, blocks.tier(), bytes - free_bytes);
          admitted != GrowResult::ok) {
        return admitted;
      }
    }
  }
  std::vector<PhysicalHandle> chunks;
  GrowResult result = GrowResult::ok;
  const auto sibling_range = ranges_.find(&sibling);
  const bool share_with_sibling =
      sibling_range != ranges_.end() && sibling_range->second.granule == range.granule;
  bool released_sibling = share_with_sibling;
  while (chunks.size() < count) {
    PhysicalHandle handle;
    if (!take_free_granule(pool, blocks, blocks, place.unmapped, &handle) &&
        !(share_with_sibling && take_free_granule(pool, sibling, blocks, nullptr, &handle))) {
      // New memory past the high-water mark raises the footprint for good: first give
      // back the sibling kind's whole free granules (of another size, so not taken).
      if (!released_sibling && allocator_.would_raise_high_water(blocks.tier(), range.granule)) {
        release(pool, sibling);
        released_sibling = true;
      }
      result = new_granule(pool, blocks, range, &handle);
      if (result != GrowResult::ok) break;
    }
    chunks.push_back(handle);
  }
  Block* target = result != GrowResult::ok    ? nullptr
                  : place.unmapped != nullptr ? place.unmapped
                                              : blocks.find_unmapped(count * range.granule);
  if (target == nullptr && result == GrowResult::ok) result = GrowResult::device_refused;
  std::uintptr_t address = place.unmapped != nullptr ? place.start
                           : target != nullptr       ? target->address
                                                     : 0;
  std::size_t placed = 0;
  for (; result == GrowResult::ok && placed < chunks.size(); ++placed) {
    if (allocator_.device->map(reinterpret_cast<void*>(address), chunks[placed]) !=
        DeviceStatus::ok) {
      result = GrowResult::device_refused;
      break;
    }
    const std::size_t index = granule_index(range, address);
    if (index >= range.chunks.size()) {
      range.chunks.resize(std::max(index + 1, 2 * range.chunks.size()));
    }
    range.chunks[index] = chunks[placed];
    allocator_.notify(EventKind::map, address, range.granule, 0, blocks.tier(), pool);
    // The rest of the stretch stays one unmapped block, right after the mapped one.
    target = blocks.map_range(target, address, range.granule)->next;
    address += range.granule;
  }
  for (std::size_t i = placed; i < chunks.size(); ++i) drop_chunk(pool, blocks, chunks[i]);
  return result;
}

std::vector<ExpandableSource::FreeRun> ExpandableSource::free_runs(const BlockPool& blocks,
                                                                   const Range& range) const {
  std::vector<FreeRun> runs;
  blocks.find_free(range.granule, [&](Block& b) {
    if (!in_range(range, b)) return false;
    const std::uintptr_t start = first_whole_granule(range, b);
    const std::uintptr_t end =
        range.base + (b.address + b.size - range.base) / range.granule * range.granule;
    if (end > start) runs.push_back({&b, start, end - start});
    return false;  // visit them all
  });
  return runs;
}

std::size_t ExpandableSource::releasable_bytes(const BlockPool& blocks) const {
  const auto found = ranges_.find(&blocks);
  if (found == ranges_.end()) return 0;
  std::size_t bytes = 0;
  for (const FreeRun& run : free_runs(blocks, found->second)) bytes += run.bytes;
  return bytes;
}

std::size_t ExpandableSource::release(PoolState& pool, BlockPool& blocks) {
  const auto found = ranges_.find(&blocks);
  if (found == ranges_.end()) return 0;
  Range& range = found->second;
  std::size_t released = 0;
  for (const FreeRun& run : free_runs(blocks, range)) {
    for (std::uintptr_t a = run.start; a < run.start + run.bytes; a += range.granule) {
      const std::size_t index = granule_index(range, a);
      allocator_.device->unmap(reinterpret_cast<void*>(a), range.granule);
      allocator_.notify(EventKind::unmap, a, range.granule, 0, blocks.tier(), pool);
      drop_chunk(pool, blocks, range.chunks[index]);
      range.chunks[index] = {};
    }
    blocks.unmap_range(run.block, run.start, run.bytes);
    released += run.bytes;
  }
  // Also a range nothing was ever mapped in (its maps refused).
  release_if_empty(pool, blocks, range);
  return released;
}

void ExpandableSource::release_if_empty(PoolState& pool, BlockPool& blocks, const Range& range) {
  const Segment* only = blocks.segments();
  if (blocks.reserved_bytes() != 0 || only == nullptr || only->next != nullptr ||
      only->address != range.base || only->size != range.size || !may_give_back_()) {
    return;
  }
  allocator_.device->release_address(reinterpret_cast<void*>(range.base), range.size);
  allocator_.add_segments(pool, blocks.tier(), blocks.kind(), -1, range.size);
  blocks.clear();
  ranges_.erase(&blocks);
}

// The range goes too, whatever may_give_back says: the plans' addresses it guards are
// the default pool's, which is never removed.
std::size_t ExpandableSource::release_removed(PoolState& pool, BlockPool& blocks) {
  const std::size_t released = release(pool, blocks);
  if (const auto found = ranges_.find(&blocks); found != ranges_.end()) {
    allocator_.add_segments(pool, blocks.tier(), blocks.kind(), -1, found->second.size);
    release_all(pool, blocks);
  }
  return released;
}

void ExpandableSource::release_all(PoolState& pool, BlockPool& blocks) {
  const auto found = ranges_.find(&blocks);
  if (found == ranges_.end()) return;
  Range& range = found->second;
  for (std::size_t i = 0; i < range.chunks.size(); ++i) {
    if (!range.chunks[i]) continue;
    allocator_.device->unmap(reinterpret_cast<void*>(range.base + i * range.granule),
                             range.granule);
    allocator_.device->release_physical(range.chunks[i]);
  }
  allocator_.device->release_address(reinterpret_cast<void*>(range.base), range.size);
  blocks.clear();
  ranges_.erase(found);
  static_cast<void>(pool);
}

}  // namespace npumem::core
