#include "core/strategy/caching_source.h"

#include <algorithm>

#include "core/allocator_impl.h"
#include "core/pool/align.h"

namespace npumem::core {

PoolKind CachingSource::kind_for(std::size_t size) const {
  return size <= allocator_.config.small_size ? PoolKind::small : PoolKind::large;
}

// Mid-sized requests share segments of about large_segment bytes. Same-sized
// tensors (a model's weights, a layer's activations) come in runs, so the segment
// holds a whole number of the request with the least rounding waste. Only the
// largest counts are weighed, so a huge large_segment over a tiny request stays
// a bounded search.
std::size_t CachingSource::segment_size(const BlockPool& blocks, std::size_t size) const {
  const Config& config = allocator_.config;
  const std::size_t granularity = allocator_.granularity(blocks.tier());
  if (blocks.kind() == PoolKind::small) {
    return round_up(std::max<std::size_t>(size, config.small_segment), granularity);
  }
  if (size >= config.large_segment_threshold || size >= config.large_segment) {
    return round_up(size, granularity);
  }
  std::size_t best_segment = 0;
  std::size_t best_used = 0;
  constexpr std::size_t kCountsWeighed = 64;
  const std::size_t most = config.large_segment / size;
  const std::size_t fewest = most > kCountsWeighed ? most - kCountsWeighed + 1 : 1;
  for (std::size_t count = most; count >= fewest; --count) {
    const std::size_t segment = round_up(count * size, granularity);
    const std::size_t used = count * size;
    // Smaller waste fraction wins ((segment - used) / segment); ties keep the larger.
    if (best_segment == 0 ||
        (segment - used) * best_segment < (best_segment - best_used) * segment) {
      best_segment = segment;
      best_used = used;
    }
  }
  return best_segment;
}

// When the preferred segment does not fit (a small device, a pool's quota, the
// tier limit), the largest that holds a whole number of the request in the room left
// is tried, then smaller ones, halving down to the rounded request. (Halving alone
// gave a 4 MiB tensor a 6 MiB segment of an 8 MiB quota, and a second one no room.)
GrowResult CachingSource::grow(PoolState& pool, BlockPool& blocks, std::size_t size) {
  const std::size_t granularity = allocator_.granularity(blocks.tier());
  const std::size_t smallest = round_up(size, granularity);
  std::size_t bytes = segment_size(blocks, size);
  if (pool.quota_bytes != 0 && blocks.kind() == PoolKind::large) {
    // Under a quota a segment takes at most half the room left, in whole requests: a
    // 2 MiB tensor's 20 MiB segment filled a 20 MiB quota, and the pool's first small
    // tensor found no room for its own segment.
    const std::uint64_t half =
        allocator_.growth_room(pool, blocks.tier()) / 2 / granularity * granularity;
    if (bytes > half) bytes = std::max(smallest, round_up(half / size * size, granularity));
  }
  // Growing past the high-water mark raises the footprint for good: first give back
  // free cached segments, so the reserved peak follows the live peak.
  if (allocator_.would_raise_high_water(blocks.tier(), bytes)) {
    // Past the limit or quota too, the growth would have failed without the release:
    // PyTorch counts that release and retry in num_alloc_retries.
    const bool needed = allocator_.admit(pool, blocks.tier(), bytes) != GrowResult::ok;
    if (allocator_.reclaim(pool, blocks.tier(), size) != 0 && needed) {
      allocator_.count_alloc_retry(pool);
    }
  }
  GrowResult result = add_segment(pool, blocks, bytes);
  if (result != GrowResult::ok && bytes > smallest) {
    // Whole granules: count * size rounds up within the room when it fits their floor.
    const std::uint64_t room = allocator_.growth_room(pool, blocks.tier());
    const std::size_t count =
        std::min<std::uint64_t>(room / granularity * granularity, bytes) / size;
    if (count > 1 && round_up(count * size, granularity) < bytes) {
      bytes = round_up(count * size, granularity);
      result = add_segment(pool, blocks, bytes);
    }
  }
  while (result != GrowResult::ok && bytes > smallest) {
    bytes = std::max(smallest, round_up(bytes / 2, granularity));
    result = add_segment(pool, blocks, bytes);
  }
  return result;
}

GrowResult CachingSource::add_segment(PoolState& pool, BlockPool& blocks, std::size_t bytes) {
  const Tier tier = blocks.tier();
  if (const GrowResult admitted = allocator_.admit(pool, tier, bytes); admitted != GrowResult::ok) {
    return admitted;
  }
  void* address = nullptr;
  if (allocator_.device->allocate_segment(tier, bytes, &address) != DeviceStatus::ok) {
    return GrowResult::device_refused;
  }
  const Segment* segment = blocks.add_segment(reinterpret_cast<std::uintptr_t>(address), bytes);
  allocator_.count_device_call(pool, true);
  allocator_.add_segments(pool, tier, blocks.kind(), 1, bytes);
  allocator_.add_reserved(pool, tier, blocks.kind(), static_cast<std::int64_t>(bytes));
  allocator_.notify(EventKind::segment_alloc, segment->address, bytes, 0, tier, pool);
  return GrowResult::ok;
}

std::size_t CachingSource::release(PoolState& pool, BlockPool& blocks) {
  return release_except(pool, blocks, [](const Segment&) { return false; });
}

std::size_t CachingSource::release_except(PoolState& pool, BlockPool& blocks,
                                          const std::function<bool(const Segment&)>& keep) {
  const Tier tier = blocks.tier();
  return blocks.remove_free_segments(keep, [&](const Segment& segment) {
    allocator_.device->free_segment(tier, reinterpret_cast<void*>(segment.address), segment.size);
    allocator_.count_device_call(pool, false);
    allocator_.add_segments(pool, tier, blocks.kind(), -1, segment.size);
    allocator_.add_reserved(pool, tier, blocks.kind(), -static_cast<std::int64_t>(segment.size));
    allocator_.notify(EventKind::segment_free, segment.address, segment.size, 0, tier, pool);
  });
}

void CachingSource::release_all(PoolState& /*pool*/, BlockPool& blocks) {
  for (const Segment* s = blocks.segments(); s != nullptr; s = s->next) {
    allocator_.device->free_segment(blocks.tier(), reinterpret_cast<void*>(s->address), s->size);
  }
  blocks.clear();
}

}  // namespace npumem::core
