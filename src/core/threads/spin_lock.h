// The allocator's locks. Critical sections are tens to a few hundred instructions,
// so a test-and-test-and-set lock beats a futex mutex (one atomic exchange to take,
// one release store to give). A waiter backs off as wait_while says: yielding early
// turned two busy threads into a storm of sched_yield calls.
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

// Spins while `busy()` holds, with the CPU's pause hint, backing off exponentially,
// and yields the core only after a few thousand pauses (microseconds): the holder may
// have lost its core.
template <typename Busy>
void wait_while(Busy&& busy) {
  constexpr unsigned kMaxPauseBurst = 64;
  constexpr unsigned kPausesBeforeYield = 4096;
  unsigned pauses = 1;
  unsigned spent = 0;
  while (busy()) {
    if (spent < kPausesBeforeYield) {
      for (unsigned i = 0; i < pauses; ++i) cpu_relax();
      spent += pauses;
      if (pauses < kMaxPauseBurst) pauses *= 2;
    } else {
      std::this_thread::yield();
    }
  }
}

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) wait_until_free();
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }
  // Whether some thread holds it; acquire, so a false read sees what its last holder did.
  bool is_locked() const { return locked_.load(std::memory_order_acquire); }

 private:
  // Out of line: inline, its loop and yield call made every lock's caller save more
  // registers on its fast path.
  [[gnu::noinline, gnu::cold]] void wait_until_free() const {
    wait_while([this] { return locked_.load(std::memory_order_relaxed); });
  }

  std::atomic<bool> locked_{false};
};

}  // namespace npumem::core
