// Which front cache (thread_cache.h) the calling thread uses in each allocator, and
// what becomes of it when the thread exits: the allocator retires it (its blocks go
// back, its counters are folded) and hands it to the next new thread, so blocks it
// handed out keep a valid owner.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/threads/thread_cache.h"
#include "npumem/allocator.h"

namespace npumem::core {

struct CacheRegistry {
  // Called by an exiting thread, with `mutex` held, while the allocator lives.
  using Retire = void (*)(Allocator::Impl& owner, ThreadCache& cache);

  CacheRegistry(Allocator::Impl* allocator, Retire retire_cache);

  const std::uint64_t id;  // unique per allocator, never reused (addresses are)
  // Held while an exiting thread retires its cache and while the allocator, being
  // destroyed, clears `owner`: a retirement never meets a half-destroyed allocator.
  std::mutex mutex;
  std::atomic<Allocator::Impl*> owner;
  const Retire retire;
  // Every cache made, live or retired; changed under the allocator's lock.
  std::vector<std::unique_ptr<ThreadCache>> caches;
};

namespace detail {
// The last allocator the thread used (most programs use one): no search, no TLS guard.
inline constinit thread_local std::uint64_t last_id = 0;
inline constinit thread_local ThreadCache* last_cache = nullptr;
ThreadCache* find_thread_cache(std::uint64_t id);
}  // namespace detail

// The calling thread's cache in the allocator with this registry id, or nullptr.
inline ThreadCache* thread_cache(std::uint64_t id) {
  return detail::last_id == id ? detail::last_cache : detail::find_thread_cache(id);
}
// thread_cache() without a search: nullptr unless this allocator is the last the
// calling thread used.
inline ThreadCache* last_thread_cache(std::uint64_t id) {
  return detail::last_id == id ? detail::last_cache : nullptr;
}
// Makes `cache` the calling thread's in the registry's allocator until it exits.
// False when the thread is exiting already (its caches are retired).
bool adopt_thread_cache(const std::shared_ptr<CacheRegistry>& registry, ThreadCache* cache);

}  // namespace npumem::core
