#include <cstdio>
#include <sstream>

#include "npumem/monitor.h"
#include "npumem/units.h"
#include "observe/watch/usage.h"

namespace npumem {
namespace {

std::array<double, kTierCount> fragmentation_of(const Allocator& allocator) {
  std::array<double, kTierCount> figures{};
  for (const Tier tier : kAllTiers) {
    figures[static_cast<std::size_t>(tier)] = allocator.fragmentation(tier);
  }
  return figures;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100.0);
  return text;
}

}  // namespace

CacheRelease release_cache(Allocator& allocator) {
  CacheRelease release;
  release.before = observe::total_usage(allocator.stats());
  release.fragmentation_before = fragmentation_of(allocator);
  release.released_bytes = allocator.empty_cache();
  release.after = observe::total_usage(allocator.stats());
  release.fragmentation_after = fragmentation_of(allocator);
  return release;
}

std::string to_string(const CacheRelease& release) {
  std::ostringstream out;
  out << "before: allocated " << format_bytes(release.before.allocated_bytes) << ", reserved "
      << format_bytes(release.before.reserved_bytes) << "\n"
      << "after:  allocated " << format_bytes(release.after.allocated_bytes) << ", reserved "
      << format_bytes(release.after.reserved_bytes) << "\n"
      << "released: " << format_bytes(release.released_bytes) << "\n";
  for (const Tier tier : kAllTiers) {
    const auto index = static_cast<std::size_t>(tier);
    out << "fragmentation " << tier_name(tier) << ": "
        << percent(release.fragmentation_before[index]) << " -> "
        << percent(release.fragmentation_after[index]) << "\n";
  }
  return out.str();
}

}  // namespace npumem
