#include "recording_allocator.h"

#include <algorithm>
#include <stdexcept>

namespace npumem::python {

RecordingAllocator& RecordingAllocator::instance() {
  static auto* recorder = new RecordingAllocator();
  return *recorder;
}

void RecordingAllocator::start(c10::Allocator* inner, const ScopeBridge& scopes) {
  std::lock_guard lock(mutex_);
  if (recording_) throw std::runtime_error("a recording is running already");
  inner_ = inner;
  scopes_ = &scopes;
  recording_ = true;
  ++session_;
  next_id_ = 0;
  events_.clear();
  pools_.clear();
  current_pool_ = "default";
  current_pool_index_ = kDefaultPool;
  tags_.clear();
  current_tag_.clear();
}

Recorded RecordingAllocator::stop() {
  std::lock_guard lock(mutex_);
  if (!recording_) throw std::runtime_error("no recording is running");
  recording_ = false;
  return {std::move(events_), std::move(pools_), std::move(tags_)};
}

bool RecordingAllocator::recording() const {
  std::lock_guard lock(mutex_);
  return recording_;
}

void RecordingAllocator::mark_iteration(std::optional<std::uint64_t> key) {
  std::lock_guard lock(mutex_);
  if (recording_) events_.push_back({'i', key ? 1u : 0u, key.value_or(0)});
}

c10::Allocator* RecordingAllocator::inner() const {
  std::lock_guard lock(mutex_);
  return inner_;
}

c10::DataPtr RecordingAllocator::allocate(std::size_t bytes) const {
  c10::Allocator* source = inner();
  c10::DataPtr memory = source->allocate(bytes);
  if (bytes == 0) return memory;
  void* ptr = memory.get();
  const c10::Device device = memory.device();
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_id_++;
  if (recording_) {
    std::string pool;
    std::uint64_t quota = 0;
    scopes_->current_pool(&pool, &quota);
    if (pool != current_pool_) {
      const std::size_t index = switch_to('p', pool, current_pool_, pools_, quota);
      current_pool_index_ = pool == "default" ? kDefaultPool : index;
    }
    std::string tag;
    scopes_->current_tag(&tag);
    switch_to('t', tag, current_tag_, tags_);
    events_.push_back({'a', id, bytes});
  }
  live_.emplace(ptr, Live{std::move(memory), id, session_, bytes, current_pool_index_});
  return {ptr, ptr, &free_recorded, device};
}

std::size_t RecordingAllocator::switch_to(char kind, const std::string& name, std::string& current,
                                          std::vector<std::string>& names,
                                          std::uint64_t bytes) const {
  const auto known = std::find(names.begin(), names.end(), name);
  const auto index = static_cast<std::size_t>(known - names.begin());
  if (name == current) return index;
  if (known == names.end()) names.push_back(name);
  events_.push_back({kind, index, bytes});
  current = name;
  return index;
}

std::pair<std::size_t, std::uint64_t> RecordingAllocator::live_in_pool(
    const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto known = std::find(pools_.begin(), pools_.end(), name);
  if (!recording_ || known == pools_.end()) return {0, 0};
  const auto index = static_cast<std::size_t>(known - pools_.begin());
  std::pair<std::size_t, std::uint64_t> live{0, 0};
  for (const auto& [ptr, entry] : live_) {
    if (entry.session == session_ && entry.pool == index) {
      ++live.first;
      live.second += entry.bytes;
    }
  }
  return live;
}

void RecordingAllocator::record_pool_removal(const std::string& name) {
  std::lock_guard lock(mutex_);
  const auto known = std::find(pools_.begin(), pools_.end(), name);
  if (!recording_ || known == pools_.end()) return;
  events_.push_back({'r', static_cast<std::uint64_t>(known - pools_.begin()), 0});
  current_pool_.clear();
  current_pool_index_ = kDefaultPool;
}

c10::DeleterFnPtr RecordingAllocator::raw_deleter() const {
  return &free_recorded;
}

void RecordingAllocator::free_recorded(void* ptr) {
  RecordingAllocator& self = instance();
  // Destroyed after the lock is released: the inner deleter may take its own lock.
  c10::DataPtr memory;
  {
    std::lock_guard lock(self.mutex_);
    const auto found = self.live_.find(ptr);
    if (found == self.live_.end()) return;
    if (self.recording_ && found->second.session == self.session_) {
      self.events_.push_back({'f', found->second.id, 0});
    }
    memory = std::move(found->second.inner);
    self.live_.erase(found);
  }
}

}  // namespace npumem::python
