#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <new>
#include <utility>

#include "device/os/shared_page.h"
#include "npumem/errors.h"
#include "npumem/stats_page.h"
#include "observe/page/process_name.h"
#include "observe/page/stats_page_layout.h"
#include "observe/watch/usage.h"

namespace npumem {

using observe::PageDevice;
using observe::StatsPageLayout;

struct StatsPublisher::Shared {
  os::SharedPage page;
  StatsPageLayout* layout;
};

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

std::int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_header(StatsPageLayout& layout) {
  layout.version = observe::kStatsPageVersion;
  layout.pid = static_cast<std::int32_t>(::getpid());
  const std::string name = observe::this_process_display_name();
  layout.process_name.fill('\0');
  name.copy(layout.process_name.data(), layout.process_name.size() - 1);
  layout.magic.store(observe::kStatsPageMagic, std::memory_order_release);
}

void write_pools(PageDevice& device, const std::vector<PoolInfo>& pools) {
  static const PoolInfo kNone;  // a place past the allocator's pools: cleared
  const auto bytes = [](std::int64_t value) { return static_cast<std::uint64_t>(value); };
  device.pool_count.store(pools.size(), kRelaxed);
  for (std::size_t i = 0; i < device.pools.size(); ++i) {
    observe::PagePool& out = device.pools[i];
    const PoolInfo& shown = i < pools.size() ? pools[i] : kNone;
    store_text(out.name, shown.name);
    out.quota_bytes.store(shown.quota_bytes, kRelaxed);
    out.reserved_bytes.store(bytes(shown.stats.reserved_bytes.all.current), kRelaxed);
    out.allocated_bytes.store(bytes(shown.stats.allocated_bytes.all.current), kRelaxed);
    out.peak_allocated_bytes.store(bytes(shown.stats.allocated_bytes.all.peak), kRelaxed);
  }
}

void write_device(PageDevice& device, const Allocator& allocator) {
  store_text(device.name, allocator.device().name());
  const Stats stats = allocator.stats_leaving_caches();
  for (const Tier tier : kAllTiers) {
    const TierInfo info = allocator.device().tier_info(tier);
    const TierUsage usage = observe::tier_usage(stats, tier);
    observe::PageTier& out = device.tiers[static_cast<std::size_t>(tier)];
    out.present.store(info.present ? 1 : 0, kRelaxed);
    out.capacity_bytes.store(info.capacity_bytes, kRelaxed);
    out.reserved_bytes.store(usage.reserved_bytes, kRelaxed);
    out.allocated_bytes.store(usage.allocated_bytes, kRelaxed);
    out.peak_reserved_bytes.store(usage.peak_reserved_bytes, kRelaxed);
    out.peak_allocated_bytes.store(usage.peak_allocated_bytes, kRelaxed);
  }
  device.peak_reserved_bytes.store(static_cast<std::uint64_t>(stats.reserved_bytes.all.peak),
                                   kRelaxed);
  device.peak_allocated_bytes.store(static_cast<std::uint64_t>(stats.allocated_bytes.all.peak),
                                    kRelaxed);
  device.num_ooms.store(static_cast<std::uint64_t>(stats.num_ooms), kRelaxed);
  device.num_alloc_retries.store(static_cast<std::uint64_t>(stats.num_alloc_retries), kRelaxed);
  write_pools(device, allocator.pools_leaving_caches());
}

std::chrono::milliseconds checked_interval(std::chrono::milliseconds interval) {
  if (interval.count() <= 0) throw ConfigError("stats publishing interval must be positive");
  return interval;
}

os::SharedPage create_page(const std::string& name) {
  if (name.empty()) {
    return os::SharedPage::create_unique(stats_page_prefix_of_this_process(),
                                         sizeof(StatsPageLayout));
  }
  return os::SharedPage::create(name, sizeof(StatsPageLayout));
}

}  // namespace

std::string stats_page_prefix_of_this_process() {
  return std::string(kStatsPagePrefix) + std::to_string(::getpid()) + ".";
}

StatsPageSetting stats_page_setting() {
  const char* value = std::getenv(kStatsPageVariable);
  if (value == nullptr || *value == '\0') return StatsPageSetting::on;  // `VAR= cmd`: unset
  std::string text = value;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "0" || text == "off" || text == "false" || text == "no") {
    return StatsPageSetting::off;
  }
  if (text == "1" || text == "on" || text == "true" || text == "yes") return StatsPageSetting::on;
  return StatsPageSetting::unrecognised;
}

bool stats_publishing_disabled() {
  return stats_page_setting() == StatsPageSetting::off;
}

StatsPublisher::StatsPublisher() : StatsPublisher(Options{}) {}

StatsPublisher::StatsPublisher(Options options)
    : interval_(checked_interval(options.interval)),
      shared_(std::make_unique<Shared>(Shared{create_page(options.page_name), nullptr})),
      page_name_(shared_->page.name()) {
  shared_->layout = new (shared_->page.data()) StatsPageLayout{};
  allocators_.resize(observe::kPageDevices, nullptr);
  frozen_.resize(observe::kPageDevices, false);
  write_header(*shared_->layout);
  thread_ = std::thread([this] { run(); });
}

StatsPublisher::~StatsPublisher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  os::remove_shared_page(page_name_);
}

StatsPublisher::Registration StatsPublisher::publish(const Allocator& allocator) {
  std::lock_guard lock(mutex_);
  for (std::size_t slot = 0; slot < allocators_.size(); ++slot) {
    if (allocators_[slot] != nullptr || frozen_[slot]) continue;
    allocators_[slot] = &allocator;
    write_locked();
    return Registration(this, slot);
  }
  throw Error("stats page " + page_name_ + " is full: at most " +
              std::to_string(observe::kPageDevices) + " allocators per process");
}

void StatsPublisher::unregister(std::size_t slot) {
  std::lock_guard lock(mutex_);
  allocators_[slot] = nullptr;
  frozen_[slot] = false;
  write_locked();
}

void StatsPublisher::freeze(std::size_t slot) {
  std::lock_guard lock(mutex_);
  write_locked();
  allocators_[slot] = nullptr;
  frozen_[slot] = true;
}

void StatsPublisher::publish_now() {
  std::lock_guard lock(mutex_);
  write_locked();
}

void StatsPublisher::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) write_locked();
}

// One seqlock write of every slot. Needs mutex_.
void StatsPublisher::write_locked() {
  StatsPageLayout& layout = *shared_->layout;
  const std::uint64_t sequence = layout.sequence.load(kRelaxed);
  layout.sequence.store(sequence + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (std::size_t slot = 0; slot < allocators_.size(); ++slot) {
    if (frozen_[slot]) continue;
    PageDevice& device = layout.devices[slot];
    device.in_use.store(allocators_[slot] != nullptr ? 1 : 0, kRelaxed);
    if (allocators_[slot] != nullptr) write_device(device, *allocators_[slot]);
  }
  layout.update_count.fetch_add(1, kRelaxed);
  layout.updated_unix_ns.store(unix_ns(), kRelaxed);
  layout.sequence.store(sequence + 2, std::memory_order_release);
}

StatsPublisher::Registration::Registration(Registration&& other) noexcept
    : publisher_(std::exchange(other.publisher_, nullptr)), slot_(other.slot_) {}

StatsPublisher::Registration& StatsPublisher::Registration::operator=(
    Registration&& other) noexcept {
  if (this != &other) {
    reset();
    publisher_ = std::exchange(other.publisher_, nullptr);
    slot_ = other.slot_;
  }
  return *this;
}

StatsPublisher::Registration::~Registration() {
  reset();
}

void StatsPublisher::Registration::freeze() {
  if (publisher_ != nullptr) publisher_->freeze(slot_);
}

void StatsPublisher::Registration::reset() {
  if (publisher_ != nullptr) std::exchange(publisher_, nullptr)->unregister(slot_);
}

}  // namespace npumem
