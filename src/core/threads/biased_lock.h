// The allocator's own lock, biased towards one thread: a lone allocating thread
// ("solo") takes and gives it with plain stores and loads, no locked instruction (a
// tenth to a sixth of a one-thread allocation and free pair: docs/DESIGN.md). Any other
// thread takes the inner spin lock, then makes every running thread of the process
// execute a memory barrier (os::process_fence) and waits for the owner to leave.
// The owner announces itself before it looks at the inner lock; the fence makes
// sure that either the other thread sees that announcement or the owner sees the
// inner lock taken (Dekker's mutual exclusion, with the fence's cost on one side).
// Taking it from another thread costs a system call, so the bias goes to a thread
// that does nearly all the locking, and none where the OS has no process fence.
#pragma once

#include <atomic>

#include "core/threads/spin_lock.h"
#include "device/os/process_fence.h"

namespace npumem::core {

class BiasedSpinLock {
 public:
  // `token` names the calling thread (its front cache; nullptr: none). The owner's
  // way is taken only when no other thread holds the lock, else it waits as others do.
  [[gnu::always_inline]] void lock_as(const void* token) {
    if (try_enter_as_owner(token)) {
      adopt_as_owner();
    } else {
      lock();
    }
  }
  // The owner's way alone, for a caller that lets the lock go with leave_as_owner(), or
  // calls adopt_as_owner() and then unlock(): false (the lock not taken) when `token`
  // is not the owner or another thread holds the lock.
  [[gnu::always_inline]] bool try_enter_as_owner(const void* token) {
    if (token == nullptr || owner_.load(std::memory_order_relaxed) != token) return false;
    owner_inside_.store(true, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the light half of the fence
    if (!inner_.is_locked() && owner_.load(std::memory_order_relaxed) == token) return true;
    owner_inside_.store(false, std::memory_order_release);
    return false;
  }
  [[gnu::always_inline]] void leave_as_owner() {
    owner_inside_.store(false, std::memory_order_release);
  }
  void adopt_as_owner() { held_by_owner_ = true; }
  [[gnu::noinline]] void lock() {
    inner_.lock();
    wait_for_owner();
  }
  bool try_lock() {
    if (!inner_.try_lock()) return false;
    wait_for_owner();
    return true;
  }
  [[gnu::always_inline]] void unlock() {
    if (held_by_owner_) {
      held_by_owner_ = false;
      owner_inside_.store(false, std::memory_order_release);
    } else {
      inner_.unlock();
    }
  }
  // With the lock held by a thread that is not the owner (lock(), or lock_as with
  // another token): biases the lock towards `token` (nullptr: towards none, which
  // makes it a plain spin lock again).
  void set_owner(const void* token) {
    if (token != nullptr && !os::process_fence_available()) return;
    owner_.store(token, std::memory_order_relaxed);
  }

 private:
  // With the inner lock held: after the fence, an owner that announced itself is seen.
  void wait_for_owner() const {
    if (owner_.load(std::memory_order_relaxed) == nullptr) return;
    os::process_fence();
    wait_while([this] { return owner_inside_.load(std::memory_order_acquire); });
  }

  SpinLock inner_;
  std::atomic<const void*> owner_{nullptr};  // written only with the inner lock held
  std::atomic<bool> owner_inside_{false};    // written only by the owner's thread
  bool held_by_owner_ = false;               // the holder's: which way it took the lock
};

}  // namespace npumem::core
