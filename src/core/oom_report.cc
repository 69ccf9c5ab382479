#include "core/oom_report.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <sstream>
#include <string_view>

#include "core/pool/align.h"
#include "npumem/text_cell.h"
#include "npumem/units.h"

namespace npumem::core {

namespace {

// Pools listed in the text; more are counted.
constexpr std::size_t kPoolLines = 16;

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100.0);
  return text;
}

// Whether `more` bytes beside `held` stay within `limit`, without the sum wrapping (a
// request near 2^64 beside live tensors passed as fitting).
bool fits(std::uint64_t held, std::uint64_t more, std::uint64_t limit) {
  return more <= limit && held <= limit - more;
}

// "hbm limit 100 MiB (of 1.00 GiB)": what a tier may hold, and its capacity when more.
std::string limit_text(Tier tier, const TierMemory& t) {
  std::string text = std::string(tier_name(tier)) + " limit " + format_bytes(t.limit_bytes);
  if (t.limit_bytes < t.capacity_bytes) text += " (of " + format_bytes(t.capacity_bytes) + ")";
  return text;
}

// Nearly full (the live tensors and the request past 90% of the limit): a setting or
// strategy may fit this request, but a workload that needs more later fails anyway (a
// training step needing 180 MiB on 150 was told "fragmented", and each setting it named
// only moved the error).
std::string nearly_full_note(const OomContext& c, const TierMemory& tier) {
  if (10 * (tier.allocated_bytes + c.rounded_bytes) <= 9 * tier.limit_bytes) return "";
  return " The live tensors and this request take " +
         format_bytes(tier.allocated_bytes + c.rounded_bytes) + " of the " +
         format_bytes(tier.limit_bytes) +
         " limit already: if the workload needs more later, only more memory helps "
         "(`npumem replay --min-capacity` of a capture measures what it needs).";
}

// When the request alone is more than any tier it may use may hold, the advice that says
// so (no freeing helps); else empty.
std::string alone_advice(const OomContext& c) {
  const std::string request = "the request alone (" + format_bytes(c.rounded_bytes) + ")";
  if (c.pinned_tier) {
    const TierMemory& t = c.tiers[static_cast<int>(*c.pinned_tier)];
    if (t.present && c.rounded_bytes <= t.limit_bytes) return {};
    return "Advice: " + request + " is more than pool '" + c.pool + "', pinned to " +
           std::string(tier_name(*c.pinned_tier)) + ", may hold there (" +
           (t.present ? limit_text(*c.pinned_tier, t) : "absent") +
           "); split the tensor, or allocate it from a pool not pinned there.";
  }
  std::string limits;
  bool raisable = false;
  for (Tier tier : kAllTiers) {
    const TierMemory& t = c.tiers[static_cast<int>(tier)];
    if (!t.present) continue;
    if (c.rounded_bytes <= t.limit_bytes) return {};
    limits += (limits.empty() ? "" : ", ") + limit_text(tier, t);
    raisable = raisable || c.rounded_bytes <= t.capacity_bytes;
  }
  return "Advice: " + request + " is more than any tier may hold (" + limits + "); " +
         (raisable ? "raise the limit (hbm:/ddr: in the config, or the memory fraction) or split "
                     "the tensor."
                   : "split the tensor, or use a device with more memory.");
}

// A size to set, as a quota or limit: its bytes too when the short form rounds them
// (a quota of the "8.01 MiB" advised held less than the advice meant).
std::string size_to_set(std::uint64_t bytes) {
  const std::string text = format_bytes(bytes);
  return parse_size(text) == bytes ? text : text + " (" + std::to_string(bytes) + " bytes)";
}

// When the pool's growth for this request is known: the quota it needs, said.
std::string quota_needed(const OomContext& c) {
  if (c.pool_quota_needed_bytes == 0) return {};
  return "; with what it reserves now, this request needs a quota of " +
         size_to_set(c.pool_quota_needed_bytes) + " (" + format_bytes(c.pool_reserved_bytes) +
         " reserved and " + format_bytes(c.pool_quota_needed_bytes - c.pool_reserved_bytes) +
         " more)";
}

std::string quota_advice(const OomContext& c) {
  if (c.rounded_bytes > c.pool_quota_bytes) {
    return "Advice: the request alone (" + format_bytes(c.rounded_bytes) +
           ") is more than the quota of pool '" + c.pool + "' (" +
           format_bytes(c.pool_quota_bytes) + "); raise the quota above it.";
  }
  const std::string needed = quota_needed(c);
  if (c.pool_allocated_bytes + c.rounded_bytes > c.pool_quota_bytes) {
    // The bytes alone are a floor; a quota counts whole segments (granules), so the
    // advised figure is the growth's when known (8.01 MiB advised still failed).
    const std::string floor = format_bytes(c.pool_allocated_bytes + c.rounded_bytes);
    return "Advice: pool '" + c.pool + "' needs " + floor + " (" +
           format_bytes(c.pool_allocated_bytes) + " allocated and " +
           format_bytes(c.rounded_bytes) + " requested), more than its quota of " +
           format_bytes(c.pool_quota_bytes) + " however tightly they are packed" +
           (needed.empty() ? "; raise the quota to " + floor +
                                 " at least (in whole segments), or free its tensors."
                           : needed + "; raise the quota to that, or free its tensors.");
  }
  std::string text = "Advice: the quota of pool '" + c.pool + "' stops its growth: it reserves " +
                     format_bytes(c.pool_reserved_bytes) + " of " +
                     format_bytes(c.pool_quota_bytes) + " (" +
                     format_bytes(c.pool_allocated_bytes) +
                     " allocated; a quota counts reserved bytes, whole segments)";
  const std::uint64_t cached = c.pool_reserved_bytes - c.pool_allocated_bytes;
  if (cached != 0 && c.strategy == "caching") {
    // A small tensor failing beside free large segments read as a fragmentation puzzle.
    text += ", and " + format_bytes(cached) + " of it is free in segments that live tensors keep" +
            (c.small_segment_bytes != 0
                 ? " (a request this small grows by a segment of its own for small tensors, " +
                       format_bytes(c.small_segment_bytes) +
                       ", which free space in large segments does not stand in for; "
                       "expandable_segments:true packs both kinds tighter)"
                 : " (expandable_segments:true packs tighter)");
  }
  return text + needed + "; raise the quota of pool '" + c.pool + "' or free its tensors.";
}

// What the other pools reserve, and the one that reserves most.
struct OthersHolding {
  std::uint64_t reserved_bytes = 0;
  const PoolMemory* most = nullptr;
  std::uint64_t most_bytes = 0;  // what `most` reserves where counted
};

// On every tier, or on `tier` alone (a pinned pool's: the others' memory elsewhere is
// none of its concern).
OthersHolding others_holding(const OomContext& c, std::optional<Tier> tier = std::nullopt) {
  OthersHolding others;
  const auto reserved = [&](const PoolMemory& pool) {
    return tier ? pool.reserved_by_tier[static_cast<int>(*tier)] : pool.reserved_bytes;
  };
  for (const PoolMemory& pool : c.pools) {
    if (pool.name == c.pool || reserved(pool) == 0) continue;
    others.reserved_bytes += reserved(pool);
    if (others.most == nullptr || reserved(pool) > others.most_bytes) {
      others.most = &pool;
      others.most_bytes = reserved(pool);
    }
  }
  return others;
}

std::string others_text(const OthersHolding& others, std::string_view where = "") {
  return "other pools reserve " + format_bytes(others.reserved_bytes) + std::string(where) +
         " (most: '" + others.most->name + "', " + format_bytes(others.most_bytes) + ")";
}

// The pools' quotas together pass what the tiers may hold: serving all models at their
// quotas at once cannot fit. Empty otherwise, and when a pool without a quota (the
// default one, say) holds memory: then no sum of quotas bounds what the pools take.
std::string overcommit_text(const OomContext& c) {
  std::uint64_t quotas = 0;
  for (const PoolMemory& pool : c.pools) {
    if (pool.quota_bytes == 0 && pool.reserved_bytes != 0) return {};
    quotas += pool.quota_bytes;
  }
  std::uint64_t limits = 0;
  for (const TierMemory& t : c.tiers) {
    if (t.present) limits += t.limit_bytes;
  }
  if (quotas <= limits) return {};
  return "; the pools' quotas add up to " + format_bytes(quotas) + ", more than the tiers may " +
         "hold (" + format_bytes(limits) + ")";
}

constexpr std::string_view kSpillAdvice =
    "Advice: DDR has room; allow spilling with spill_to_ddr:true.";

// Spilling is off and DDR could take the request: the request and what DDR reserves stay
// below its limit.
bool ddr_has_room(const OomContext& c) {
  const TierMemory& ddr = c.tiers[static_cast<int>(Tier::ddr)];
  return !c.spill_to_ddr && !c.pinned_tier && ddr.present && c.rounded_bytes < ddr.limit_bytes &&
         ddr.reserved_bytes < ddr.limit_bytes - c.rounded_bytes;
}

// The tiers present that this request may use: its pool's pinned tier, else HBM, and DDR
// when spilling.
std::vector<Tier> usable_tiers(const OomContext& c) {
  std::vector<Tier> tiers;
  for (Tier tier : kAllTiers) {
    const bool usable =
        c.pinned_tier ? tier == *c.pinned_tier : tier == Tier::hbm || c.spill_to_ddr;
    if (usable && c.tiers[static_cast<int>(tier)].present) tiers.push_back(tier);
  }
  return tiers;
}

// The live tensors and the request fit within HBM and DDR together, but the room is
// split between them and a tensor is not: the advice that says so, else empty.
std::string split_across_tiers(const OomContext& c) {
  if (c.pinned_tier || !c.spill_to_ddr) return {};
  std::uint64_t allocated = 0;
  std::uint64_t limits = 0;
  std::string rooms;
  for (Tier tier : usable_tiers(c)) {
    const TierMemory& t = c.tiers[static_cast<int>(tier)];
    const std::uint64_t room = t.limit_bytes - std::min(t.limit_bytes, t.allocated_bytes);
    if (room >= c.rounded_bytes) return {};  // one tier could hold it: another cause
    allocated += t.allocated_bytes;
    limits += t.limit_bytes;
    rooms += (rooms.empty() ? "" : ", ") + std::string(tier_name(tier)) + " " + format_bytes(room);
  }
  if (!fits(allocated, c.rounded_bytes, limits)) return {};
  return "Advice: the live tensors and this request fit within the tiers together, but no "
         "one tier has room for the request (" +
         rooms +
         " beside the live tensors) and a tensor is not split across tiers; free tensors, or "
         "reduce the batch size.";
}

// Expandable maps whole granules: a limit that holds the live tensors and the request
// in bytes may not in granules (a cold trial: 4.5 MiB live and 2 MiB asked on 7 MiB,
// told the device had refused). The advice that says so, else empty.
std::string granule_advice(const OomContext& c) {
  for (Tier tier : usable_tiers(c)) {
    const TierMemory& t = c.tiers[static_cast<int>(tier)];
    const std::uint64_t granule = t.granule_bytes;
    if (granule == 0 || !fits(t.allocated_bytes, c.rounded_bytes, t.limit_bytes)) continue;
    const std::uint64_t held = t.limit_bytes / granule;
    const std::uint64_t packed = (t.allocated_bytes + c.rounded_bytes + granule - 1) / granule;
    const std::string in_granules =
        " granules of " + format_bytes(granule) + " (" + c.granule_setting + ")";
    if (packed > held) {
      return "Advice: memory is mapped in whole granules, and the " + limit_text(tier, t) +
             " holds " + std::to_string(held) + in_granules + "; the live tensors (" +
             format_bytes(t.allocated_bytes) + ") and this request need " + std::to_string(packed) +
             " however tightly packed. Raise the limit to " + format_bytes(packed * granule) +
             ", or use smaller granules.";
    }
    const std::uint64_t growth = round_up(c.rounded_bytes, granule);
    // A free block that would hold it is another pool's or size class's: said below.
    if (fits(t.reserved_bytes, growth, t.limit_bytes) || t.largest_free_bytes >= c.rounded_bytes) {
      continue;
    }
    return "Advice: the live tensors and this request would fit in " + std::to_string(packed) +
           " of the " + std::to_string(held) + in_granules + " the " + limit_text(tier, t) +
           " holds, but not as they lie: this request needs " + format_bytes(c.rounded_bytes) +
           " in one piece, the largest free block is " + format_bytes(t.largest_free_bytes) +
           ", and the " + format_bytes(t.free_cached_bytes) +
           " free in mapped granules lies between live blocks (of this pool, or of others "
           "sharing the granules), so new granules beside the " +
           format_bytes(t.reserved_bytes) +
           " reserved would pass the limit; free tensors, or empty the cache (empty_cache) "
           "between phases so that whole free granules go back.";
  }
  return {};
}

std::string pinned_advice(const OomContext& c) {
  const TierMemory& t = c.tiers[static_cast<int>(*c.pinned_tier)];
  std::string text = "Advice: pool '" + c.pool + "' is pinned to " +
                     std::string(tier_name(*c.pinned_tier)) + ", where " +
                     format_bytes(t.reserved_bytes) + " of its " + format_bytes(t.limit_bytes) +
                     " limit is reserved";
  if (const OthersHolding others = others_holding(c, *c.pinned_tier); others.reserved_bytes != 0) {
    text += "; " + others_text(others, " of it");
  }
  if (t.free_cached_bytes < c.rounded_bytes) {
    return text + "; free tensors there or raise the tier's limit (hbm:/ddr:).";
  }
  // A small request beside large free blocks, or free space between live blocks.
  return text + "; " + format_bytes(t.free_cached_bytes) +
         " of it is cached free where this request cannot go (in segments that live blocks "
         "hold, or of the other size class): " +
         (c.strategy == "expandable"
              ? std::string("empty the cache (empty_cache) between phases")
              : std::string("try expandable_segments:true, which maps free memory for any "
                            "request, or empty the cache (empty_cache) between phases")) +
         "; else free tensors there or raise the tier's limit (hbm:/ddr:).";
}

std::string advice(const OomContext& c) {
  const TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  const TierMemory& ddr = c.tiers[static_cast<int>(Tier::ddr)];
  if (c.past_largest_block) {
    return "Advice: no block can hold the request (" + format_bytes(c.requested_bytes) +
           "); split the tensor.";
  }
  if (c.arena_exhausted) {
    // A named pool's arena is its quota; the default pool's is static_size.
    if (c.pool_quota_bytes != 0) {
      return "Advice: the static arena of pool '" + c.pool + "' (its quota) is full; raise the " +
             "pool's quota (npumem replay --advise measures each pool's) or allow " +
             "static_fallback:true.";
    }
    const TierMemory& arena = c.tiers[static_cast<int>(Tier::hbm)];
    if (arena.free_cached_bytes >= c.rounded_bytes) {
      return "Advice: the static arena has " + format_bytes(arena.free_cached_bytes) +
             " free, but in pieces (the largest " + format_bytes(arena.largest_free_bytes) +
             ") too small for this request; raise static_size (npumem replay --advise "
             "measures it) or allow static_fallback:true.";
    }
    if (arena.free_cached_bytes == 0) {
      return "Advice: the static arena is full; raise static_size (npumem replay --advise "
             "measures it) or allow static_fallback:true.";
    }
    // Mostly free, perhaps, and short by a little: "full" beside 16.0 MiB free read as
    // wrong for a 16 MiB request (15.99 MiB free).
    const std::uint64_t short_by = c.rounded_bytes - arena.free_cached_bytes;
    return "Advice: the static arena (" + format_bytes(arena.reserved_bytes) + ") has " +
           format_bytes(arena.free_cached_bytes) + " free beside its live tensors, " +
           format_bytes(short_by) + " short of this request; raise static_size to " +
           size_to_set(arena.reserved_bytes + short_by) +
           " at least (npumem replay --advise measures what the workload needs) or allow "
           "static_fallback:true.";
  }
  if (std::string alone = alone_advice(c); !alone.empty()) return alone;
  if (c.quota_refused && c.pool_quota_bytes != 0) return quota_advice(c);
  if (c.address_space_refused) {
    return "Advice: the process's virtual address space is used up: each expandable range "
           "(one per pool, tier and size class in use" +
           (c.pools.empty() ? std::string() : ", of " + std::to_string(c.pools.size()) + " pools") +
           ") reserves twice what it may map, its tier's limit or its pool's quota; give the "
           "pools quotas, use fewer pools, or strategy:caching.";
  }
  const OthersHolding others = others_holding(c);
  if (c.pinned_tier) return pinned_advice(c);
  if (std::string granules = granule_advice(c); !granules.empty()) return granules;
  for (const TierMemory* tier : {&hbm, &ddr}) {
    if (tier->present && tier->free_cached_bytes >= c.rounded_bytes &&
        tier->largest_free_bytes < c.rounded_bytes) {
      // Under expandable, fragmentation is within the mapped ranges: suggesting the
      // strategy already in use would be no advice.
      std::string advice =
          c.strategy == "expandable"
              ? "Advice: enough memory is free but fragmented within granules that live "
                "blocks also use (mapping cannot gather it); empty the cache (empty_cache) "
                "between phases."
          : c.max_split_size_set
              ? "Advice: enough memory is free but fragmented; try expandable_segments:true "
                "(max_split_size is set already)."
              : "Advice: enough memory is free but fragmented; try expandable_segments:true, "
                "or max_split_size to keep large cached blocks whole.";
      return advice + nearly_full_note(c, *tier);
    }
  }
  if (c.memory_fraction < 1.0 && hbm.limit_bytes < hbm.capacity_bytes &&
      !fits(hbm.reserved_bytes, c.rounded_bytes, hbm.limit_bytes)) {
    return "Advice: the per-process memory fraction holds HBM below its capacity; raise it "
           "(set_per_process_memory_fraction in Python, npumem_set_memory_fraction in C, "
           "Allocator::set_memory_fraction in C++) or free tensors.";
  }
  for (const TierMemory* tier : {&hbm, &ddr}) {
    // Enough is cached free, and the live tensors and this request fit within the
    // limit: the free memory lies where this request cannot use it, in segments that
    // live blocks keep from being released; unless the device said why it refused (the
    // new segment, larger than the request, may pass the limit where the request would not).
    // So too when less is cached free than the request, but the live tensors leave
    // room for it that reserved segments strand (a cold trial: 5 MiB live and 2.5 MiB
    // asked on 8 MiB, with 6 MiB reserved in whole granules).
    if (tier->present && fits(tier->allocated_bytes, c.rounded_bytes, tier->limit_bytes) &&
        (!fits(tier->reserved_bytes, c.rounded_bytes, tier->limit_bytes) ||
         (tier->free_cached_bytes >= c.rounded_bytes && c.device_error.empty()))) {
      const std::string free = format_bytes(tier->free_cached_bytes);
      if (c.strategy == "expandable") {
        return "Advice: the live tensors and this request fit within the limit, and " + free +
               " is cached free, but within granules that live blocks of other pools or of the "
               "other size class also use (mapping cannot gather it); free those tensors or "
               "empty the cache (empty_cache) between phases.";
      }
      if (c.pools.empty()) {
        // One pool: the free memory is this pool's, scattered between live blocks (every
        // other tensor freed, then a larger one asked for: the list of places it might
        // be hid that).
        return "Advice: the live tensors and this request fit within the limit, but the " + free +
               " cached free is fragmented: in pieces (the largest " +
               format_bytes(tier->largest_free_bytes) +
               ") in segments that live blocks keep from being released (of this size class "
               "or the other: small or large pool), and this request's new segment does not "
               "fit beside them; try expandable_segments:true, or free those tensors." +
               nearly_full_note(c, *tier);
      }
      return "Advice: the live tensors and this request fit within the limit, and " + free +
             " is cached free, but in segments this request cannot use (another pool's, or "
             "the other size class's: small or large pool) that live blocks keep from being "
             "released, or beside which its new segment does not fit; try "
             "expandable_segments:true, or free those tensors." +
             nearly_full_note(c, *tier);
    }
  }
  // The live tensors and this request fit within the limit, so something outside this
  // allocator (a device fault, another process on the device) withheld the memory.
  if (hbm.present && fits(hbm.allocated_bytes, c.rounded_bytes, hbm.limit_bytes) &&
      fits(hbm.reserved_bytes, c.rounded_bytes, hbm.limit_bytes)) {
    return "Advice: the live tensors and this request fit within the HBM limit, but the device "
           "refused the memory (another process on the device, or a device fault); check "
           "npumem smi.";
  }
  if (ddr_has_room(c)) return std::string(kSpillAdvice);
  if (std::string split = split_across_tiers(c); !split.empty()) return split;
  if (others.reserved_bytes != 0) {
    // A quota to lower only where the pool has one (a pool without was told to lower it).
    const std::string quotas = others.most->quota_bytes != 0
                                   ? "lower their quotas"
                                   : "give them quotas (create_pool(name, quota))";
    return "Advice: the live tensors of all pools need more than the device holds: " +
           others_text(others) + overcommit_text(c) + "; free their tensors or " + quotas +
           ", or reduce this model's batch size.";
  }
  // How much more: what a smaller batch, sharding or recomputation must save.
  std::uint64_t allocated = 0;
  std::uint64_t limits = 0;
  for (Tier tier : usable_tiers(c)) {
    allocated += c.tiers[static_cast<int>(tier)].allocated_bytes;
    limits += c.tiers[static_cast<int>(tier)].limit_bytes;
  }
  const std::string short_by = allocated + c.rounded_bytes > limits
                                   ? " (" + format_bytes(allocated) +
                                         " live and this request need " +
                                         format_bytes(allocated + c.rounded_bytes - limits) +
                                         " more than the " + format_bytes(limits) + " it may hold)"
                                   : "";
  return "Advice: the live tensors need more than the device holds" + short_by +
         "; reduce the batch size, shard the model (npumem.torch.shard in PyTorch, npumem plan "
         "shard for a model description) or recompute activations (npumem.torch.checkpoint, "
         "npumem plan recompute).";
}

}  // namespace

std::string explain_out_of_memory(const OomContext& c) {
  std::ostringstream out;
  out << "out of memory: cannot allocate " << format_bytes(c.requested_bytes) << " ("
      << c.requested_bytes << " bytes requested, ";
  if (c.past_largest_block) {
    out << "more than any block can hold)";
  } else {
    out << c.rounded_bytes << " rounded)";
  }
  out << " in pool '" << c.pool << "'";
  if (c.pinned_tier) out << " pinned to " << tier_name(*c.pinned_tier);
  out << " (strategy " << c.strategy << ")";
  if (c.pool_quota_bytes != 0) {
    out << " (quota " << format_bytes(c.pool_quota_bytes) << ", reserved "
        << format_bytes(c.pool_reserved_bytes) << ")";
  }
  out << ".\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-4s %12s %12s %12s %12s %12s %13s %14s\n", "tier",
                "capacity", "limit", "reserved", "allocated", "free cached", "largest free",
                "fragmentation");
  out << line;
  for (Tier tier : kAllTiers) {
    const TierMemory& t = c.tiers[static_cast<int>(tier)];
    if (!t.present) {
      std::snprintf(line, sizeof line, "  %-4s %12s\n", std::string(tier_name(tier)).c_str(),
                    "absent");
    } else {
      std::snprintf(line, sizeof line, "  %-4s %12s %12s %12s %12s %12s %13s %14s\n",
                    std::string(tier_name(tier)).c_str(), format_bytes(t.capacity_bytes).c_str(),
                    format_bytes(t.limit_bytes).c_str(), format_bytes(t.reserved_bytes).c_str(),
                    format_bytes(t.allocated_bytes).c_str(),
                    format_bytes(t.free_cached_bytes).c_str(),
                    format_bytes(t.largest_free_bytes).c_str(), percent(t.fragmentation).c_str());
    }
    out << line;
  }
  if (!c.pools.empty()) {
    const auto shown = std::span(c.pools).first(std::min(c.pools.size(), kPoolLines));
    // As wide as the longest name shown (npumem.checkpoint.gradients pushed the figures
    // of its row out of line), in display columns: a pool may be named in Chinese, as
    // the seeds' labels are.
    std::size_t name_width = 20;
    for (const PoolMemory& pool : shown) {
      name_width = std::max(name_width, npumem::display_width(pool.name));
    }
    std::snprintf(line, sizeof line, " %12s %12s %12s\n", "quota", "reserved", "allocated");
    out << "  " << npumem::pad_right("pool", name_width) << line;
    for (const PoolMemory& pool : shown) {
      std::snprintf(line, sizeof line, " %12s %12s %12s\n",
                    pool.quota_bytes == 0 ? "none" : format_bytes(pool.quota_bytes).c_str(),
                    format_bytes(pool.reserved_bytes).c_str(),
                    format_bytes(pool.allocated_bytes).c_str());
      out << "  " << npumem::pad_right(pool.name, name_width) << line;
    }
    if (c.pools.size() > kPoolLines) out << "  and " << c.pools.size() - kPoolLines << " more\n";
  }
  if (c.memory_fraction < 1.0) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", c.memory_fraction);
    out << "  (HBM is capped at " << percent(c.memory_fraction) << " of its capacity by the "
        << "per-process memory fraction " << fraction << ")\n";
  }
  if (!c.spill_to_ddr) out << "  (spilling to DDR is disabled)\n";
  if (!c.device_error.empty()) out << "  device: " << c.device_error << "\n";
  const std::string text = advice(c);
  out << text;
  // Advice about HBM alone (fragmentation, say) leaves out the quicker way out.
  if (ddr_has_room(c) && text != kSpillAdvice) {
    out << " Or: DDR has room; spill_to_ddr:true would place this request there.";
  }
  return out.str();
}

}  // namespace npumem::core
