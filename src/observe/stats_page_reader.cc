#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <thread>

#include "device/shared_page.h"
#include "npumem/stats_page.h"
#include "observe/stats_page_layout.h"

namespace npumem {
namespace {

using observe::StatsPageLayout;

constexpr auto kRelaxed = std::memory_order_relaxed;
// A publisher holds the seqlock for microseconds; give up on a page after this many tries.
constexpr int kReadAttempts = 1000;

// The pid a page name carries after the prefix ("npumem.<pid>"), or 0.
int pid_in_name(std::string_view name, std::string_view prefix) {
  const std::string_view rest = name.substr(prefix.size());
  int pid = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  return error == std::errc{} && (end == rest.data() + rest.size() || *end == '.') ? pid : 0;
}

PublishedDevice read_device(const observe::PageDevice& page) {
  PublishedDevice device;
  device.name = load_text(page.name);
  for (const Tier tier : kAllTiers) {
    const observe::PageTier& in = page.tiers[static_cast<std::size_t>(tier)];
    device.tiers[static_cast<std::size_t>(tier)] = {
        tier,
        in.present.load(kRelaxed) != 0,
        in.capacity_bytes.load(kRelaxed),
        in.reserved_bytes.load(kRelaxed),
        in.allocated_bytes.load(kRelaxed),
        in.peak_reserved_bytes.load(kRelaxed),
        in.peak_allocated_bytes.load(kRelaxed),
    };
  }
  device.num_ooms = page.num_ooms.load(kRelaxed);
  device.num_alloc_retries = page.num_alloc_retries.load(kRelaxed);
  return device;
}

// A consistent copy of the changing fields, or nullopt when the writer never paused.
std::optional<ProcessStats> read_consistent(const StatsPageLayout& layout) {
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    const std::uint64_t before = layout.sequence.load(std::memory_order_acquire);
    if (before % 2 != 0) {
      std::this_thread::yield();
      continue;
    }
    ProcessStats stats;
    stats.update_count = layout.update_count.load(kRelaxed);
    stats.updated_unix_ns = layout.updated_unix_ns.load(kRelaxed);
    for (const observe::PageDevice& device : layout.devices) {
      if (device.in_use.load(kRelaxed) != 0) stats.devices.push_back(read_device(device));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (layout.sequence.load(kRelaxed) == before) return stats;
  }
  return std::nullopt;
}

std::optional<ProcessStats> read_page(const std::string& name, std::string_view prefix) {
  const auto page = os::SharedPage::open_read_only(name, sizeof(StatsPageLayout));
  const auto* layout = page ? static_cast<const StatsPageLayout*>(page->data()) : nullptr;
  const bool ready = layout != nullptr &&
                     layout->magic.load(std::memory_order_acquire) == observe::kStatsPageMagic;
  const int pid = ready ? layout->pid : pid_in_name(name, prefix);
  if (!os::process_alive(pid)) {
    os::remove_shared_page(name);
    return std::nullopt;
  }
  if (!ready || layout->version != observe::kStatsPageVersion) return std::nullopt;
  std::optional<ProcessStats> stats = read_consistent(*layout);
  if (!stats) return std::nullopt;
  stats->pid = pid;
  stats->process_name =
      std::string(layout->process_name.data(),
                  strnlen(layout->process_name.data(), layout->process_name.size()));
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
