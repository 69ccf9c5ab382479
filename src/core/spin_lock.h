// The allocator's lock. Critical sections are a few hundred instructions, so a
// test-and-test-and-set lock beats a futex mutex (one atomic exchange to take,
// one release store to give); after a short spin it yields the core.
#pragma once

#include <atomic>
#include <thread>

namespace npumem::core {

class SpinLock {
 public:
  void lock() {
    for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > kSpinsBeforeYield) std::this_thread::yield();
      }
    }
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr unsigned kSpinsBeforeYield = 64;
  std::atomic<bool> locked_{false};
};

}  // namespace npumem::core
