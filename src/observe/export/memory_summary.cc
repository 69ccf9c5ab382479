#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

#include "npumem/monitor.h"
#include "npumem/planned_report.h"
#include "npumem/units.h"

namespace npumem {
namespace {

constexpr int kWidth = 75;  // inside the outer bars, as PyTorch's table

using Format = std::string (*)(std::int64_t);

std::string bytes_cell(std::int64_t value) {
  return format_bytes(value > 0 ? static_cast<std::uint64_t>(value) : 0);
}

std::string count_cell(std::int64_t value) {
  return std::to_string(value);
}

std::string rule(char c) {
  return "|" + std::string(kWidth, c) + "|\n";
}

std::string centered(const std::string& text) {
  const int space = kWidth - static_cast<int>(text.size());
  const int left = space > 0 ? space / 2 : 0;
  const int right = space > 0 ? space - left : 0;
  return "|" + std::string(static_cast<std::size_t>(left), ' ') + text +
         std::string(static_cast<std::size_t>(right), ' ') + "|\n";
}

std::string row(const std::string& name, const Stat& stat, Format format) {
  char text[128];
  std::snprintf(text, sizeof text, "| %-21s | %10s | %10s | %10s | %10s |\n", name.c_str(),
                format(stat.current).c_str(), format(stat.peak).c_str(),
                format(stat.allocated).c_str(), format(stat.freed).c_str());
  return text;
}

// One metric: its total row, then the pool-kind and tier splits.
std::string metric(const std::string& name, const StatSplit& split, Format format) {
  std::string text = row(name, split.all, format);
  text += row("      from large pool", split.by_kind[static_cast<int>(PoolKind::large)], format);
  text += row("      from small pool", split.by_kind[static_cast<int>(PoolKind::small)], format);
  for (const Tier tier : kAllTiers) {
    text += row("      on " + std::string(tier_name(tier)), split.by_tier[static_cast<int>(tier)],
                format);
  }
  return text + rule('-');
}

std::string counters(const Stats& stats) {
  char text[128];
  std::snprintf(
      text, sizeof text, "OOMs: %lld | alloc retries: %lld | spills: %lld | reclaims: %lld",
      static_cast<long long>(stats.num_ooms), static_cast<long long>(stats.num_alloc_retries),
      static_cast<long long>(stats.num_spills), static_cast<long long>(stats.num_reclaims));
  return centered(text);
}

std::string header() {
  char text[128];
  std::snprintf(text, sizeof text, "| %-21s | %10s | %10s | %10s | %10s |\n", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  return text;
}

std::string pool_section(const PoolInfo& pool) {
  const std::string quota = pool.quota_bytes == 0 ? "none" : format_bytes(pool.quota_bytes);
  const std::string pinned =
      pool.tier ? ", pinned to " + std::string(tier_name(*pool.tier)) : std::string();
  std::string text = centered("pool \"" + pool.name + "\" (quota " + quota + pinned + ")");
  text += counters(pool.stats) + rule('-');
  text += row("Allocated memory", pool.stats.allocated_bytes.all, bytes_cell);
  text += row("Requested memory", pool.stats.requested_bytes.all, bytes_cell);
  text += row("Reserved memory", pool.stats.reserved_bytes.all, bytes_cell);
  text += row("Allocations", pool.stats.allocation.all, count_cell);
  text += row("Segments", pool.stats.segment.all, count_cell);
  return text + rule('=');
}

// One line of the table, left-aligned between the bars.
std::string left_aligned(const std::string& text) {
  constexpr std::size_t kInside = kWidth - 2;  // a space inside each bar
  return "| " + text + std::string(kInside - std::min(text.size(), kInside), ' ') + " |\n";
}

// `text` as lines of the table, wrapped at spaces; the lines it continues on are indented.
std::string wrapped(const std::string& text) {
  constexpr std::size_t kInside = kWidth - 2;
  std::string out;
  std::string line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (line.empty()) {
      line = word;
    } else if (line.size() + 1 + word.size() > kInside) {
      out += left_aligned(line);
      line = "   " + word;
    } else {
      line += " " + word;
    }
  }
  return out + left_aligned(line);
}

// The planned report (planned_report.h), the account every report of the plans shows.
std::string planned_section(const PlannedStats& stats, std::string_view marks) {
  std::string text = centered("planned strategy");
  for (const ReportLine& line : planned_report_lines(stats, marks)) {
    text += wrapped(line.name + ": " + line.value);
  }
  return text + rule('=');
}

}  // namespace

std::string memory_summary(const Allocator& allocator, std::string_view marks) {
  const Stats stats = allocator.stats();
  std::ostringstream out;
  out << rule('=') << centered("npumem memory summary, device " + allocator.device().name())
      << rule('-') << counters(stats) << rule('=') << header() << rule('-')
      << metric("Allocated memory", stats.allocated_bytes, bytes_cell)
      << metric("Active memory", stats.active_bytes, bytes_cell)
      << metric("Requested memory", stats.requested_bytes, bytes_cell)
      << metric("Reserved memory", stats.reserved_bytes, bytes_cell)
      // PyTorch's rows too: free cached memory empty_cache() cannot release.
      << metric("Non-releasable memory", stats.inactive_split_bytes, bytes_cell)
      << metric("Allocations", stats.allocation, count_cell)
      << metric("Active allocs", stats.active, count_cell)
      << metric("Segments", stats.segment, count_cell)
      << metric("Non-releasable allocs", stats.inactive_split, count_cell) << rule('=');
  for (const PoolInfo& pool : allocator.pools()) out << pool_section(pool);
  if (allocator.config().strategy == Strategy::planned) {
    out << planned_section(allocator.planned_stats(), marks);
  }
  return out.str();
}

}  // namespace npumem
