#include "npumem/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace npumem {

void StatSplit::reset_peak() {
  all.reset_peak();
  for (Stat& stat : by_kind) stat.reset_peak();
  for (Stat& stat : by_tier) stat.reset_peak();
}

void StatSplit::keep_higher_peaks(const StatSplit& other) {
  all.peak = std::max(all.peak, other.all.peak);
  for (std::size_t k = 0; k < by_kind.size(); ++k) {
    by_kind[k].peak = std::max(by_kind[k].peak, other.by_kind[k].peak);
  }
  for (std::size_t t = 0; t < by_tier.size(); ++t) {
    by_tier[t].peak = std::max(by_tier[t].peak, other.by_tier[t].peak);
  }
}

void StatSplit::reset_accumulated() {
  all.reset_accumulated();
  for (Stat& stat : by_kind) stat.reset_accumulated();
  for (Stat& stat : by_tier) stat.reset_accumulated();
}

template <typename Self>
auto Stats::splits(Self& s) {
  return std::array{&s.allocated_bytes, &s.active_bytes,   &s.requested_bytes,
                    &s.reserved_bytes,  &s.allocation,     &s.active,
                    &s.segment,         &s.inactive_split, &s.inactive_split_bytes};
}

void Stats::reset_peak() {
  for (StatSplit* split : splits(*this)) split->reset_peak();
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

void Stats::keep_higher_peaks(const Stats& other) {
  const auto theirs = splits(other);
  const auto ours = splits(*this);
  for (std::size_t i = 0; i < ours.size(); ++i) ours[i]->keep_higher_peaks(*theirs[i]);
  oversize_allocations.peak = std::max(oversize_allocations.peak, other.oversize_allocations.peak);
  oversize_segments.peak = std::max(oversize_segments.peak, other.oversize_segments.peak);
}

void Stats::reset_accumulated() {
  for (StatSplit* split : splits(*this)) split->reset_accumulated();
  oversize_allocations.reset_accumulated();
  oversize_segments.reset_accumulated();
  num_alloc_retries = 0;
  num_ooms = 0;
  num_device_alloc = 0;
  num_device_free = 0;
  num_spills = 0;
  num_reclaims = 0;
}

namespace {

void add_stat(std::map<std::string, std::int64_t>& out, const std::string& prefix,
              const Stat& stat) {
  out[prefix + ".current"] = stat.current;
  out[prefix + ".peak"] = stat.peak;
  out[prefix + ".allocated"] = stat.allocated;
  out[prefix + ".freed"] = stat.freed;
}

void add_split(std::map<std::string, std::int64_t>& out, const std::string& name,
               const StatSplit& split) {
  add_stat(out, name + ".all", split.all);
  add_stat(out, name + ".small_pool", split.by_kind[static_cast<int>(PoolKind::small)]);
  add_stat(out, name + ".large_pool", split.by_kind[static_cast<int>(PoolKind::large)]);
  for (Tier tier : kAllTiers) {
    add_stat(out, name + "." + std::string(tier_name(tier)), split.by_tier[static_cast<int>(tier)]);
  }
}

}  // namespace

std::map<std::string, std::int64_t> Stats::as_map() const {
  std::map<std::string, std::int64_t> out;
  add_split(out, "allocated_bytes", allocated_bytes);
  add_split(out, "active_bytes", active_bytes);
  add_split(out, "requested_bytes", requested_bytes);
  add_split(out, "reserved_bytes", reserved_bytes);
  add_split(out, "allocation", allocation);
  add_split(out, "active", active);
  add_split(out, "segment", segment);
  add_split(out, "inactive_split", inactive_split);
  add_split(out, "inactive_split_bytes", inactive_split_bytes);
  add_stat(out, "oversize_allocations", oversize_allocations);
  add_stat(out, "oversize_segments", oversize_segments);
  out["max_split_size"] = max_split_size;
  out["num_alloc_retries"] = num_alloc_retries;
  out["num_ooms"] = num_ooms;
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
  out["num_spills"] = num_spills;
  out["num_reclaims"] = num_reclaims;
  for (Tier from : kAllTiers) {
    for (Tier to : kAllTiers) {
      const CopyStat& copy = copies[static_cast<int>(from)][static_cast<int>(to)];
      const std::string direction =
          std::string(tier_name(from)) + "_to_" + std::string(tier_name(to));
      out["num_copies." + direction] = copy.count;
      out["copy_bytes." + direction] = copy.bytes;
      // Capped at 2^63-1 ns (292 years), which llround would turn negative past.
      const double ns = copy.modelled_seconds * 1e9;
      out["copy_modelled_ns." + direction] =
          ns < 9.2e18 ? std::llround(ns) : std::numeric_limits<std::int64_t>::max();
    }
  }
  return out;
}

}  // namespace npumem
