// The layout of a stats page in shared memory, shared by the publisher (one writer
// per page) and any number of readers in other processes. Every field that changes
// is a lock-free atomic word; a sequence counter (a seqlock: odd while the publisher
// writes) lets a reader take a consistent copy without blocking the writer.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "npumem/device.h"

namespace npumem::observe {

inline constexpr std::uint32_t kStatsPageMagic = 0x4d55504e;  // "NPUM"
// 2: whole-device peaks (a process that spilled showed the sum of its tiers' peaks).
// 3: each device's pools.
inline constexpr std::uint32_t kStatsPageVersion = 3;
inline constexpr std::size_t kPageDevices = 8;
inline constexpr std::size_t kPagePools = 8;  // per device; pool_count says how many there are
inline constexpr std::size_t kPageTextBytes = 64;

using PageWord = std::atomic<std::uint64_t>;
static_assert(PageWord::is_always_lock_free, "stats pages need lock-free 64-bit atomics");

// Text that may change while readers look (device names): one atomic byte each.
struct PageText {
  std::array<std::atomic<char>, kPageTextBytes> chars;
};

struct PageTier {
  PageWord present;
  PageWord capacity_bytes;
  PageWord reserved_bytes;
  PageWord allocated_bytes;
  PageWord peak_reserved_bytes;
  PageWord peak_allocated_bytes;
};

struct PagePool {
  PageText name;
  PageWord quota_bytes;
  PageWord reserved_bytes;
  PageWord allocated_bytes;
  PageWord peak_allocated_bytes;
};

struct PageDevice {
  PageWord in_use;
  PageText name;
  std::array<PageTier, kTierCount> tiers;
  PageWord num_ooms;
  PageWord num_alloc_retries;
  // Of all tiers together: not the sum of the tiers' peaks, which came at other times.
  PageWord peak_reserved_bytes;
  PageWord peak_allocated_bytes;
  PageWord pool_count;  // the allocator's; the first kPagePools are in `pools`
  std::array<PagePool, kPagePools> pools;
};

struct StatsPageLayout {
  // Written once before `magic` is set (release); fixed afterwards.
  std::atomic<std::uint32_t> magic;
  std::uint32_t version;
  std::int32_t pid;
  std::array<char, kPageTextBytes> process_name;
  // Changing fields, under the seqlock.
  PageWord sequence;
  PageWord update_count;
  std::atomic<std::int64_t> updated_unix_ns;
  std::array<PageDevice, kPageDevices> devices;
};

static_assert(std::is_standard_layout_v<StatsPageLayout>);

// Truncates to kPageTextBytes - 1 bytes; the rest is zeroed.
void store_text(PageText& text, std::string_view value);
std::string load_text(const PageText& text);

}  // namespace npumem::observe
