#include "core/oom_report.h"

#include <cstdio>
#include <sstream>

#include "npumem/units.h"

namespace npumem::core {

namespace {

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

std::string advice(const OomContext& c) {
  const TierMemory& hbm = c.tiers[static_cast<int>(Tier::hbm)];
  const TierMemory& ddr = c.tiers[static_cast<int>(Tier::ddr)];
  if (c.arena_exhausted) {
    // A named pool's arena is its quota; the default pool's is static_size.
    if (c.pool_quota_bytes != 0) {
      return "Advice: the static arena of pool '" + c.pool + "' (its quota) is full; raise the " +
             "pool's quota (npumem replay --advise measures each pool's) or allow " +
             "static_fallback:true.";
    }
    return "Advice: the static arena is full; raise static_size (npumem replay --advise "
           "measures it) or allow static_fallback:true.";
  }
  if (c.quota_refused) {
    return "Advice: the pool's quota is spent; raise the quota of pool '" + c.pool +
           "' or free its tensors.";
  }
  if (c.pinned_tier) {
    return "Advice: pool '" + c.pool + "' is pinned to " + std::string(tier_name(*c.pinned_tier)) +
           ", which is full; free its tensors or raise the tier's limit (hbm/ddr).";
  }
  for (const TierMemory* tier : {&hbm, &ddr}) {
    if (tier->present && tier->free_cached_bytes >= c.rounded_bytes &&
        tier->largest_free_bytes < c.rounded_bytes) {
      // Under expandable, fragmentation is within the mapped ranges: suggesting the
      // strategy already in use would be no advice.
      return c.strategy == "expandable"
                 ? "Advice: enough memory is free but fragmented within granules that live "
                   "blocks also use (mapping cannot gather it); empty the cache (empty_cache) "
                   "between phases."
                 : "Advice: enough memory is free but fragmented; try expandable_segments:true, "
                   "or max_split_size to keep large cached blocks whole.";
    }
  }
  if (c.memory_fraction < 1.0 && hbm.limit_bytes < hbm.capacity_bytes &&
      !fits(hbm.reserved_bytes, c.rounded_bytes, hbm.limit_bytes)) {
    return "Advice: the per-process memory fraction holds HBM below its capacity; raise it "
           "(set_per_process_memory_fraction) or free tensors.";
  }
  for (const TierMemory* tier : {&hbm, &ddr}) {
    // Enough is cached free, and the live tensors and this request fit within the
    // limit: the free memory lies where this request cannot use it, in segments that
    // live blocks keep from being released; unless the device said why it refused (the
    // new segment, larger than the request, may pass the limit where the request would not).
    if (tier->present && tier->free_cached_bytes >= c.rounded_bytes &&
        fits(tier->allocated_bytes, c.rounded_bytes, tier->limit_bytes) &&
        (!fits(tier->reserved_bytes, c.rounded_bytes, tier->limit_bytes) ||
         c.device_error.empty())) {
      const std::string free = format_bytes(tier->free_cached_bytes);
      return c.strategy == "expandable"
                 ? "Advice: the live tensors and this request fit within the limit, and " + free +
                       " is cached free, but within granules that live blocks of other pools or "
                       "of the other size class also use (mapping cannot gather it); free those "
                       "tensors or empty the cache (empty_cache) between phases."
                 : "Advice: the live tensors and this request fit within the limit, and " + free +
                       " is cached free, but in segments this request cannot use (another "
                       "pool's, or the other size class's: small or large pool) that live blocks "
                       "keep from being released, or beside which its new segment does not fit; "
                       "try expandable_segments:true, or free those tensors.";
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
  // Room to spare: the request and what is reserved stay below the limit.
  if (!c.spill_to_ddr && ddr.present && c.rounded_bytes < ddr.limit_bytes &&
      ddr.reserved_bytes < ddr.limit_bytes - c.rounded_bytes) {
    return "Advice: DDR has room; allow spilling with spill_to_ddr:true.";
  }
  return "Advice: the live tensors need more than the device holds; reduce the batch size, "
         "shard the model (npumem plan shard) or recompute activations (npumem plan recompute).";
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
  if (c.memory_fraction < 1.0) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", c.memory_fraction);
    out << "  (HBM is capped at " << percent(c.memory_fraction) << " of its capacity by the "
        << "per-process memory fraction " << fraction << ")\n";
  }
  if (!c.spill_to_ddr) out << "  (spilling to DDR is disabled)\n";
  if (!c.device_error.empty()) out << "  device: " << c.device_error << "\n";
  out << advice(c);
  return out.str();
}

}  // namespace npumem::core
