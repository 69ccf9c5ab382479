// The allocator's locks. Critical sections are tens to a few hundred instructions,
// so a test-and-test-and-set lock beats a futex mutex (one atomic exchange to take,
// one release store to give). A waiter spins with the CPU's pause hint, backing off
// exponentially, and yields the core only after a few thousand pauses (microseconds):
// yielding early turned two busy threads into a storm of sched_yield calls.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace npumem::core {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) wait_until_free();
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  // Out of line: inline, its loop and yield call made every lock's caller save more
  // registers on its fast path.
  [[gnu::noinline, gnu::cold]] void wait_until_free() const {
    unsigned pauses = 1;
    unsigned spent = 0;
    while (locked_.load(std::memory_order_relaxed)) {
      if (spent < kPausesBeforeYield) {
        for (unsigned i = 0; i < pauses; ++i) cpu_relax();
        spent += pauses;
        if (pauses < kMaxPauseBurst) pauses *= 2;
      } else {
        std::this_thread::yield();  // the holder may have lost its core
      }
    }
  }

  static constexpr unsigned kMaxPauseBurst = 64;
  static constexpr unsigned kPausesBeforeYield = 4096;
  std::atomic<bool> locked_{false};
};

}  // namespace npumem::core
