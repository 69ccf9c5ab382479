#include "core/threads/thread_cache_registry.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace npumem::core {

namespace {

std::atomic<std::uint64_t> next_registry_id{1};

// The thread's caches, one per allocator it used; exiting retires them.
struct HeldCaches {
  std::vector<std::pair<std::shared_ptr<CacheRegistry>, ThreadCache*>> entries;
  ~HeldCaches();
};

thread_local HeldCaches held;
thread_local bool exiting = false;

HeldCaches::~HeldCaches() {
  exiting = true;
  detail::last_id = 0;
  detail::last_cache = nullptr;
  for (auto& [registry, cache] : entries) {
    std::lock_guard guard(registry->mutex);
    if (Allocator::Impl* owner = registry->owner.load()) registry->retire(*owner, *cache);
  }
}

}  // namespace

CacheRegistry::CacheRegistry(Allocator::Impl* allocator, Retire retire_cache)
    : id(next_registry_id.fetch_add(1, std::memory_order_relaxed)),
      owner(allocator),
      retire(retire_cache) {}

ThreadCache* detail::find_thread_cache(std::uint64_t id) {
  // An exiting thread's caches are retired, and `held` may be gone already (the main
  // thread's, when a static object's destructor takes an allocator's lock at exit).
  if (exiting) return nullptr;
  for (const auto& [registry, cache] : held.entries) {
    if (registry->id == id) {
      detail::last_id = id;
      detail::last_cache = cache;
      return cache;
    }
  }
  return nullptr;
}

bool adopt_thread_cache(const std::shared_ptr<CacheRegistry>& registry, ThreadCache* cache) {
  if (exiting) return false;
  // Entries of destroyed allocators go first, so a thread using many in turn stays
  // small. No registry mutex here: the caller holds an allocator's lock, and an
  // exiting thread takes them in the other order.
  std::erase_if(held.entries,
                [](const auto& entry) { return entry.first->owner.load() == nullptr; });
  held.entries.emplace_back(registry, cache);
  detail::last_id = registry->id;
  detail::last_cache = cache;
  return true;
}

}  // namespace npumem::core
