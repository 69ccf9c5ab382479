// The allocator's locks. Critical sections are tens to a few hundred instructions,
// so a test-and-test-and-set lock beats a futex mutex (one atomic exchange to take,
// one release store to give). A waiter backs off as Backoff says: yielding early
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

// Pauses with the CPU's hint, backing off exponentially, and yields the core only
// after a few thousand pauses (microseconds): the holder may have lost its core.
class Backoff {
 public:
  void wait() {
    if (spent_ < kPausesBeforeYield) {
      for (unsigned i = 0; i < pauses_; ++i) cpu_relax();
      spent_ += pauses_;
      if (pauses_ < kMaxPauseBurst) pauses_ *= 2;
    } else {
      std::this_thread::yield();
    }
  }
  // Past the pauses: a waiter this long is no longer in a brief race for the lock.
  bool yielding() const { return spent_ >= kPausesBeforeYield; }

 private:
  static constexpr unsigned kMaxPauseBurst = 64;
  static constexpr unsigned kPausesBeforeYield = 4096;
  unsigned pauses_ = 1;
  unsigned spent_ = 0;
};

// Spins while `busy()` holds, backing off as Backoff does.
template <typename Busy>
void wait_while(Busy&& busy) {
  Backoff backoff;
  while (busy()) backoff.wait();
}

// A test-and-test-and-set lock that cannot starve a waiter: one that has waited past
// the pauses claims the next turn (handoff_), and no other thread takes the lock until
// it has. Without it, a thread reading statistics in a loop kept the lock from an
// allocating thread for minutes: each release, it took the lock back before the
// yielding waiter looked again.
class SpinLock {
 public:
  void lock() {
    if (!handoff_.load(std::memory_order_relaxed) &&
        !locked_.exchange(true, std::memory_order_acquire)) {
      return;
    }
    lock_contended();
  }
  bool try_lock() {
    return !handoff_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }
  // Whether some thread holds it; acquire, so a false read sees what its last holder did.
  bool is_locked() const { return locked_.load(std::memory_order_acquire); }

 private:
  // Out of line: inline, its loop and yield call made every lock's caller save more
  // registers on its fast path.
  [[gnu::noinline, gnu::cold]] void lock_contended() {
    Backoff backoff;
    bool claimed = false;
    for (;;) {
      const bool may_take = claimed || !handoff_.load(std::memory_order_relaxed);
      if (may_take && !locked_.load(std::memory_order_relaxed) &&
          !locked_.exchange(true, std::memory_order_acquire)) {
        if (claimed) handoff_.store(false, std::memory_order_relaxed);
        return;
      }
      if (backoff.yielding() && !claimed) {
        bool unclaimed = false;
        claimed = handoff_.compare_exchange_strong(unclaimed, true, std::memory_order_relaxed);
      }
      backoff.wait();
    }
  }

  std::atomic<bool> locked_{false};
  std::atomic<bool> handoff_{false};  // a starving waiter has claimed the next turn
};

}  // namespace npumem::core
