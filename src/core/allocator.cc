// The public facade: locks and forwards to Allocator::Impl.
#include "npumem/allocator.h"

#include <algorithm>

#include "core/allocator_impl.h"
#include "npumem/errors.h"
#include "util/untrusted_text.h"

namespace npumem {

Allocator::Allocator(std::shared_ptr<Device> device, Config config,
                     std::shared_ptr<const ArenaPlanner> planner)
    : impl_(std::make_unique<Impl>(std::move(device), config, std::move(planner))) {}

Allocator::~Allocator() = default;

void* Allocator::allocate(std::size_t bytes) {
  return impl_->allocate(bytes);
}

void* Allocator::allocate(std::size_t bytes, StreamId stream) {
  return impl_->allocate(bytes, stream);
}

void Allocator::deallocate(void* ptr) {
  impl_->deallocate(ptr);
}

void Allocator::record_stream(void* ptr, StreamId stream) {
  impl_->record_stream(ptr, stream);
}

bool Allocator::resize(void* ptr, std::size_t bytes) {
  return impl_->resize(ptr, bytes);
}

double Allocator::copy(void* dst, const void* src, std::size_t bytes) {
  return impl_->copy(dst, src, bytes);
}

bool Allocator::owns(const void* ptr) const {
  std::lock_guard lock(impl_->mutex);
  const core::Block* block = impl_->live.find(reinterpret_cast<std::uintptr_t>(ptr));
  return block != nullptr && !block->cached;  // a cached block is free, as for live_block
}

Tier Allocator::tier_of(const void* ptr) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->live_block(ptr).segment->tier;
}

std::size_t Allocator::allocation_size(const void* ptr) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->live_block(ptr).requested;
}

Stats Allocator::stats() const {
  std::lock_guard lock(impl_->mutex);
  impl_->flush_recycled();
  return impl_->public_stats(nullptr);
}

Stats Allocator::stats_leaving_caches() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->public_stats(nullptr);
}

Stats Allocator::stats_since_start() const {
  std::lock_guard lock(impl_->mutex);
  impl_->flush_recycled();
  Stats stats = impl_->public_stats(nullptr);
  stats.keep_higher_peaks(impl_->peaks_before_reset);
  return stats;
}

void Allocator::reset_peak_stats() {
  std::lock_guard lock(impl_->mutex);
  impl_->peaks_before_reset.keep_higher_peaks(impl_->public_stats(nullptr));
  impl_->stats.reset_peak();
  for (auto& pool : impl_->pools) pool->stats.reset_peak();
  if (impl_->planned != nullptr) impl_->planned->reset_steady_peaks();
  impl_->drop_credit();
}

void Allocator::reset_accumulated_stats() {
  std::lock_guard lock(impl_->mutex);
  impl_->stats.reset_accumulated();
  for (auto& pool : impl_->pools) pool->stats.reset_accumulated();
  if (impl_->planned != nullptr) impl_->planned->reset_accumulated();
}

void Allocator::set_memory_fraction(double fraction) {
  std::lock_guard lock(impl_->mutex);
  impl_->set_memory_fraction(fraction);
}

double Allocator::memory_fraction() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->memory_fraction;
}

std::size_t Allocator::empty_cache() {
  return impl_->empty_cache();
}

std::vector<SegmentInfo> Allocator::snapshot() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->snapshot();
}

std::uint64_t Allocator::largest_free_block(Tier tier) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->largest_free_block(tier);
}

double Allocator::fragmentation(Tier tier) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->fragmentation(tier);
}

namespace {

bool is_control(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

// Names go into tables, reports and messages, which a control character would cut or break.
void check_pool_name(const std::string& name) {
  if (name.empty()) throw ConfigError("a pool needs a name");
  if (std::any_of(name.begin(), name.end(), is_control)) {
    throw ConfigError("pool name '" + util::escaped_for_display(name) +
                      "' holds a control character");
  }
}

}  // namespace

void Allocator::create_pool(const std::string& name, std::uint64_t quota_bytes,
                            std::optional<Tier> tier) {
  check_pool_name(name);
  std::lock_guard lock(impl_->mutex);
  if (impl_->find_pool(name) != nullptr) throw ConfigError("pool '" + name + "' exists already");
  impl_->create_pool(name, quota_bytes, tier);
}

std::size_t Allocator::remove_pool(const std::string& name) {
  return impl_->remove_pool(name);
}

std::vector<PoolInfo> Allocator::pools() const {
  std::lock_guard lock(impl_->mutex);
  impl_->flush_recycled();
  return impl_->pool_infos();
}

std::vector<PoolInfo> Allocator::pools_leaving_caches() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->pool_infos();
}

void Allocator::mark_iteration(std::optional<std::uint64_t> key) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->planned != nullptr) impl_->planned->iteration_boundary(key);
  impl_->notify(EventKind::iteration, 0, 0, 0, Tier::hbm, *impl_->pools.front());
}

PlannedStats Allocator::planned_stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->planned != nullptr ? impl_->planned->stats() : PlannedStats{};
}

void Allocator::add_observer(std::shared_ptr<AllocatorObserver> observer) {
  std::lock_guard lock(impl_->mutex);
  impl_->add_observer(std::move(observer));
}

void Allocator::remove_observer(const std::shared_ptr<AllocatorObserver>& observer) {
  std::lock_guard lock(impl_->mutex);
  impl_->remove_observer(observer);
}

Device& Allocator::device() const {
  return *impl_->device;
}

const Config& Allocator::config() const {
  return impl_->config;
}

std::vector<std::string> Allocator::warnings() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->warnings;
}

PoolScope::PoolScope(Allocator& allocator, const std::string& pool)
    : previous_owner_(Allocator::Impl::scope_owner()),
      previous_pool_(Allocator::Impl::scope_pool()) {
  Allocator::Impl& impl = *allocator.impl_;
  core::PoolState* state = nullptr;
  {
    std::lock_guard lock(impl.mutex);
    state = impl.find_pool(pool);
    if (state != nullptr) ++state->scopes;  // under the lock remove_pool takes
  }
  if (state == nullptr)
    throw ConfigError("unknown pool '" + util::escaped_for_display(pool) + "'; create it first");
  pool_ = state;
  Allocator::Impl::set_scope(&impl, state);
}

PoolScope::~PoolScope() {
  --pool_->scopes;
  Allocator::Impl::set_scope(previous_owner_, previous_pool_);
}

std::string PoolScope::current_pool() {
  const core::PoolState* pool = Allocator::Impl::scope_pool();
  return pool == nullptr ? std::string("default") : pool->name;
}

std::uint64_t PoolScope::current_pool_quota() {
  const core::PoolState* pool = Allocator::Impl::scope_pool();
  return pool == nullptr ? 0 : pool->quota_bytes;
}

}  // namespace npumem
