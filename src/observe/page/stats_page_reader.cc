#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "device/os/shared_page.h"
#include "npumem/stats_page.h"
#include "observe/page/stats_page_layout.h"
#include "util/untrusted_text.h"

namespace npumem {
namespace {

using observe::StatsPageLayout;

constexpr auto kRelaxed = std::memory_order_relaxed;
// A publisher holds the seqlock for microseconds; give up on a page after this many tries.
constexpr int kReadAttempts = 1000;
// No device holds more (kMaxTierBytes) and no process counts more events: larger
// figures on a page are not measurements, and the page is not shown.
constexpr std::uint64_t kMaxPlausibleBytes = kMaxTierBytes;
constexpr std::uint64_t kMaxPlausibleCount = std::uint64_t{1} << 48;

// The pid a page name carries after the prefix ("npumem.<pid>.<random>"), or 0.
int pid_in_name(std::string_view name, std::string_view prefix) {
  const std::string_view rest = name.substr(prefix.size());
  int pid = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  return error == std::errc{} && (end == rest.data() + rest.size() || *end == '.') ? pid : 0;
}

// A copy of the page taken while the publisher did not write (the seqlock's sequence
// even and unchanged around it), or nullptr: gone, short, or never still.
std::unique_ptr<StatsPageLayout> copy_page(const os::SharedPageReader& reader) {
  auto copy = std::make_unique<StatsPageLayout>();
  constexpr std::size_t kSequenceAt = offsetof(StatsPageLayout, sequence);
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    std::uint64_t before = 0;
    std::uint64_t after = 0;
    if (!reader.read(kSequenceAt, &before, sizeof before)) return nullptr;
    if (before % 2 != 0) {
      std::this_thread::yield();
      continue;
    }
    if (!reader.read(0, copy.get(), sizeof(StatsPageLayout))) return nullptr;
    if (!reader.read(kSequenceAt, &after, sizeof after)) return nullptr;
    if (after == before) return copy;
  }
  return nullptr;
}

bool is_flag(std::uint64_t value) {
  return value <= 1;
}

bool plausible(const PublishedTier& tier) {
  for (const std::uint64_t bytes : {tier.capacity_bytes, tier.reserved_bytes, tier.allocated_bytes,
                                    tier.peak_reserved_bytes, tier.peak_allocated_bytes}) {
    if (bytes > kMaxPlausibleBytes) return false;
  }
  return tier.allocated_bytes <= tier.reserved_bytes &&
         tier.reserved_bytes <= tier.peak_reserved_bytes &&
         tier.allocated_bytes <= tier.peak_allocated_bytes &&
         tier.peak_reserved_bytes <= tier.capacity_bytes;
}

// The pools the page holds, or nullopt when a figure cannot be true.
std::optional<std::vector<PublishedPool>> read_pools(const observe::PageDevice& page,
                                                     std::uint64_t count) {
  std::vector<PublishedPool> pools;
  for (std::size_t i = 0; i < std::min<std::uint64_t>(count, page.pools.size()); ++i) {
    const observe::PagePool& in = page.pools[i];
    PublishedPool pool{util::escaped_for_display(load_text(in.name)), in.quota_bytes.load(kRelaxed),
                       in.reserved_bytes.load(kRelaxed), in.allocated_bytes.load(kRelaxed),
                       in.peak_allocated_bytes.load(kRelaxed)};
    if (pool.reserved_bytes > kMaxPlausibleBytes || pool.allocated_bytes > pool.reserved_bytes ||
        pool.allocated_bytes > pool.peak_allocated_bytes ||
        pool.peak_allocated_bytes > kMaxPlausibleBytes) {
      return std::nullopt;
    }
    pools.push_back(std::move(pool));
  }
  return pools;
}

// The device, or nullopt when a figure on the page cannot be true.
std::optional<PublishedDevice> read_device(const observe::PageDevice& page) {
  PublishedDevice device;
  device.name = util::escaped_for_display(load_text(page.name));
  for (const Tier tier : kAllTiers) {
    const observe::PageTier& in = page.tiers[static_cast<std::size_t>(tier)];
    const std::uint64_t present = in.present.load(kRelaxed);
    if (!is_flag(present)) return std::nullopt;
    PublishedTier& out = device.tiers[static_cast<std::size_t>(tier)];
    out = {
        tier,
        present != 0,
        in.capacity_bytes.load(kRelaxed),
        in.reserved_bytes.load(kRelaxed),
        in.allocated_bytes.load(kRelaxed),
        in.peak_reserved_bytes.load(kRelaxed),
        in.peak_allocated_bytes.load(kRelaxed),
    };
    if (!plausible(out)) return std::nullopt;
  }
  device.peak_reserved_bytes = page.peak_reserved_bytes.load(kRelaxed);
  device.peak_allocated_bytes = page.peak_allocated_bytes.load(kRelaxed);
  device.num_ooms = page.num_ooms.load(kRelaxed);
  device.num_alloc_retries = page.num_alloc_retries.load(kRelaxed);
  if (device.num_ooms > kMaxPlausibleCount || device.num_alloc_retries > kMaxPlausibleCount) {
    return std::nullopt;
  }
  // The whole device's peaks lie between the largest tier's and the tiers' sum.
  std::uint64_t reserved_sum = 0;
  std::uint64_t allocated_sum = 0;
  for (const PublishedTier& tier : device.tiers) {
    if (device.peak_reserved_bytes < tier.reserved_bytes ||
        device.peak_allocated_bytes < tier.allocated_bytes) {
      return std::nullopt;
    }
    reserved_sum += tier.peak_reserved_bytes;
    allocated_sum += tier.peak_allocated_bytes;
  }
  if (device.peak_reserved_bytes > reserved_sum || device.peak_allocated_bytes > allocated_sum) {
    return std::nullopt;
  }
  device.pool_count = page.pool_count.load(kRelaxed);
  if (device.pool_count > kMaxPlausibleCount) return std::nullopt;
  std::optional<std::vector<PublishedPool>> pools = read_pools(page, device.pool_count);
  if (!pools) return std::nullopt;
  device.pools = std::move(*pools);
  return device;
}

// The page's figures, or nullopt when any of them cannot be true.
std::optional<ProcessStats> read_figures(const StatsPageLayout& layout) {
  ProcessStats stats;
  stats.update_count = layout.update_count.load(kRelaxed);
  stats.updated_unix_ns = layout.updated_unix_ns.load(kRelaxed);
  if (stats.updated_unix_ns < 0) return std::nullopt;
  for (const observe::PageDevice& page : layout.devices) {
    const std::uint64_t in_use = page.in_use.load(kRelaxed);
    if (!is_flag(in_use)) return std::nullopt;
    if (in_use == 0) continue;
    std::optional<PublishedDevice> device = read_device(page);
    if (!device) return std::nullopt;
    stats.devices.push_back(std::move(*device));
  }
  stats.process_name = util::escaped_for_display(std::string_view(
      layout.process_name.data(), strnlen(layout.process_name.data(), layout.process_name.size())));
  return stats;
}

std::optional<ProcessStats> read_page(const std::string& name, std::string_view prefix) {
  const std::optional<os::SharedPageReader> reader = os::SharedPageReader::open(name);
  if (!reader) return std::nullopt;
  const int pid = pid_in_name(name, prefix);
  if (pid <= 0) return std::nullopt;
  if (!os::process_alive(pid)) {
    // A dead process has no figures to show. Its page is removed only by its owner's
    // readers, and only when the process its name gives has gone: a page's contents
    // never decide that (another user could write a dead pid into them).
    if (reader->owner_uid() == os::current_uid()) os::remove_shared_page(name);
    return std::nullopt;
  }
  // Being created, of another version, or not a stats page at all.
  if (reader->size() != sizeof(StatsPageLayout)) return std::nullopt;
  const std::unique_ptr<StatsPageLayout> layout = copy_page(*reader);
  if (!layout || layout->magic.load(kRelaxed) != observe::kStatsPageMagic ||
      layout->version != observe::kStatsPageVersion || layout->pid != pid) {
    return std::nullopt;
  }
  // The page speaks for a live process of the user who owns the page, or not at all.
  if (os::process_owner_uid(pid) != reader->owner_uid()) return std::nullopt;
  std::optional<ProcessStats> stats = read_figures(*layout);
  if (!stats) return std::nullopt;
  stats->pid = pid;
  stats->page_name = name;
  return stats;
}

}  // namespace

std::vector<ProcessStats> read_stats_pages(std::string_view prefix) {
  std::vector<ProcessStats> processes;
  for (const std::string& name : os::list_shared_pages(prefix)) {
    if (auto stats = read_page(name, prefix)) processes.push_back(std::move(*stats));
  }
  std::sort(processes.begin(), processes.end(),
            [](const ProcessStats& a, const ProcessStats& b) { return a.pid < b.pid; });
  return processes;
}

}  // namespace npumem
