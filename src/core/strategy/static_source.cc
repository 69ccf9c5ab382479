#include "core/strategy/static_source.h"

#include "core/allocator_impl.h"
#include "core/pool/align.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::core {

void StaticSource::pool_created(PoolState& pool) {
  const bool is_default = allocator_.pools.empty() || allocator_.pools.front().get() == &pool;
  const std::uint64_t requested = is_default ? allocator_.config.static_size : pool.quota_bytes;
  if (requested == 0) {
    throw ConfigError(is_default ? "static strategy needs static_size:<bytes> (the arena size; "
                                   "`npumem replay TRACE --strategy static --advise` finds one)"
                                 : "static strategy: pool '" + pool.name +
                                       "' needs a quota, which sizes its arena");
  }
  // The default pool's arena rounds up to whole granules; a named pool's rounds down,
  // within its quota (rounded up, a quota of 1 GiB + 1 B was refused by itself).
  const std::size_t granularity = allocator_.granularity(Tier::hbm);
  const std::size_t bytes =
      is_default ? round_up(requested, granularity) : requested / granularity * granularity;
  // Said, as a quota not in whole granules is (create_pool): static_size:1MiB reserved
  // 2 MiB without a word.
  if (is_default && bytes != requested) {
    allocator_.warnings.push_back(
        "static_size:" + format_bytes(requested) + " (" + std::to_string(requested) +
        " bytes) is not a whole number of HBM granules of " + format_bytes(granularity) +
        "; the arena is " + format_bytes(bytes));
  }
  if (bytes == 0) {
    throw ConfigError("static strategy: pool '" + pool.name + "' has a quota of " +
                      format_bytes(requested) + ", below one HBM granule (" +
                      format_bytes(granularity) + "), the least an arena can be");
  }
  BlockPool& blocks = pool.block_pool(Tier::hbm, PoolKind::large);
  const GrowResult reserved = fallback_.add_segment(pool, blocks, bytes);
  if (reserved == GrowResult::device_refused) {
    // Within the limit, so the device itself said no: a fault or memory held elsewhere.
    throw OutOfMemory("out of memory: the device refused the static arena of " +
                          format_bytes(bytes) + " for pool '" + pool.name +
                          "', which is within the HBM limit (" +
                          format_bytes(allocator_.limit(Tier::hbm)) +
                          ").\nAdvice: a device fault, or memory held outside this allocator "
                          "(another process on the device; check npumem smi); retry, or lower "
                          "static_size.",
                      bytes, pool.name);
  }
  if (reserved != GrowResult::ok) {
    // What other arenas hold already: a 10 MiB arena refused by an 18 MiB limit reads as
    // a contradiction without it.
    // Whose: the default pool's least arena of one granule, which a trace of named pools
    // alone still has, read as memory from nowhere.
    const auto reserved_already = static_cast<std::uint64_t>(
        allocator_.stats.reserved_bytes.by_tier[static_cast<std::size_t>(Tier::hbm)].current);
    std::string arenas;
    for (const auto& other : allocator_.pools) {
      const std::uint64_t held = other->reserved_bytes();
      if (other.get() == &pool || held == 0) continue;
      arenas += std::string(arenas.empty() ? "" : ", ") + "pool '" + other->name + "' " +
                format_bytes(held);
    }
    const std::string beside = reserved_already == 0
                                   ? ""
                                   : " beside the " + format_bytes(reserved_already) +
                                         " reserved already (" + arenas + ")";
    // A named pool's arena is its quota; static_size sizes the default pool's only.
    const std::string lower =
        is_default ? std::string("lower static_size")
                   : "lower the quota of pool '" + pool.name + "' or of the pools before it";
    throw OutOfMemory("out of memory: the static arena of " + format_bytes(bytes) + " for pool '" +
                          pool.name + "' does not fit in HBM" + beside + " (limit " +
                          format_bytes(allocator_.limit(Tier::hbm)) + ").\nAdvice: " + lower +
                          " (npumem replay --advise measures what a workload needs) or use a "
                          "larger device.",
                      bytes, pool.name);
  }
  arenas_.insert(blocks.segments()->address);
}

GrowResult StaticSource::grow(PoolState& pool, BlockPool& blocks, std::size_t size) {
  if (!allocator_.config.static_fallback) return GrowResult::arena_exhausted;
  return fallback_.grow(pool, blocks, size);
}

std::size_t StaticSource::release(PoolState& pool, BlockPool& blocks) {
  return fallback_.release_except(
      pool, blocks, [&](const Segment& segment) { return arenas_.count(segment.address) != 0; });
}

void StaticSource::release_all(PoolState& pool, BlockPool& blocks) {
  fallback_.release_all(pool, blocks);
}

std::size_t StaticSource::release_removed(PoolState& pool, BlockPool& blocks) {
  for (const Segment* s = blocks.segments(); s != nullptr; s = s->next) arenas_.erase(s->address);
  return fallback_.release(pool, blocks);
}

}  // namespace npumem::core
