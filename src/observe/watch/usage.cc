#include "observe/watch/usage.h"

namespace npumem::observe {
namespace {

std::uint64_t bytes(std::int64_t value) {
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

TierUsage usage(const Stat& allocated, const Stat& reserved) {
  return {bytes(allocated.current), bytes(reserved.current), bytes(allocated.peak),
          bytes(reserved.peak)};
}

}  // namespace

TierUsage total_usage(const Stats& stats) {
  return usage(stats.allocated_bytes.all, stats.reserved_bytes.all);
}

TierUsage tier_usage(const Stats& stats, Tier tier) {
  const auto index = static_cast<std::size_t>(tier);
  return usage(stats.allocated_bytes.by_tier[index], stats.reserved_bytes.by_tier[index]);
}

}  // namespace npumem::observe
