// The allocator's biased lock: mutual exclusion between its owner, taking it without
// a locked instruction, and other threads, taking it with one and a process fence;
// also while the bias moves.
#include "core/threads/biased_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace npumem::core {
namespace {

// A critical section that notices company: a plain counter (a race here is what
// ThreadSanitizer reports) and a flag that two holders at once would both see set.
struct Guarded {
  std::uint64_t count = 0;
  std::atomic<bool> held{false};
  std::atomic<int> overlaps{0};
  void enter_and_leave() {
    if (held.exchange(true, std::memory_order_relaxed)) overlaps.fetch_add(1);
    // Long enough that a holder let in beside another would meet it.
    for (int i = 0; i < 64; ++i) {
      ++count;
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    count -= 63;
    if (!held.load(std::memory_order_relaxed)) overlaps.fetch_add(1);
    held.store(false, std::memory_order_relaxed);
  }
};

constexpr int kRounds = 200'000;
constexpr int kOtherRounds = 2'000;  // each costs a process fence

TEST(BiasedSpinLock, OwnerAndOthersExcludeEachOther) {
  BiasedSpinLock lock;
  Guarded guarded;
  const int owner_token = 0;
  lock.lock();
  lock.set_owner(&owner_token);
  lock.unlock();
  std::atomic<int> others_running{2};
  std::uint64_t owner_rounds = 0;
  std::thread owner([&] {
    // Until the others are done, so that every one of their rounds meets the owner.
    while (others_running.load(std::memory_order_relaxed) > 0 || owner_rounds < kRounds) {
      lock.lock_as(&owner_token);
      guarded.enter_and_leave();
      lock.unlock();
      ++owner_rounds;
    }
  });
  std::vector<std::thread> others;
  for (int t = 0; t < 2; ++t) {
    others.emplace_back([&, t] {
      const int other_token = t;  // a token that is not the owner's takes the common way
      for (int i = 0; i < kOtherRounds; ++i) {
        if (i % 2 == 0) {
          lock.lock();
        } else {
          lock.lock_as(&other_token);
        }
        guarded.enter_and_leave();
        lock.unlock();
      }
      others_running.fetch_sub(1);
    });
  }
  for (std::thread& other : others) other.join();
  owner.join();
  EXPECT_EQ(guarded.overlaps.load(), 0);
  EXPECT_EQ(guarded.count, owner_rounds + 2 * kOtherRounds);
}

// The owner keeps working while another thread takes the bias away and gives it
// back: each way of taking the lock excludes the others throughout.
TEST(BiasedSpinLock, BiasMovesWhileTheOwnerWorks) {
  BiasedSpinLock lock;
  Guarded guarded;
  const int owner_token = 0;
  std::atomic<bool> moving{true};
  std::atomic<std::uint64_t> owner_rounds{0};
  std::thread owner([&] {
    while (moving.load(std::memory_order_relaxed)) {
      lock.lock_as(&owner_token);
      guarded.enter_and_leave();
      lock.unlock();
      owner_rounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  constexpr int kMoves = 200;
  for (int move = 0; move < kMoves; ++move) {
    lock.lock();
    guarded.enter_and_leave();
    lock.set_owner(move % 2 == 0 ? &owner_token : nullptr);
    lock.unlock();
    // The owner takes the lock at least once each way, biased and not.
    const std::uint64_t seen = owner_rounds.load();
    while (owner_rounds.load() < seen + 2) std::this_thread::yield();
  }
  moving.store(false);
  owner.join();
  EXPECT_EQ(guarded.overlaps.load(), 0);
  EXPECT_EQ(guarded.count, owner_rounds.load() + kMoves);
}

TEST(BiasedSpinLock, TryLockFailsWhileAnotherThreadHoldsIt) {
  BiasedSpinLock lock;
  const int owner_token = 0;
  lock.lock();
  lock.set_owner(&owner_token);
  bool taken = true;
  std::thread([&] { taken = lock.try_lock(); }).join();
  EXPECT_FALSE(taken);
  lock.unlock();
  std::thread([&] {
    taken = lock.try_lock();
    if (taken) lock.unlock();
  }).join();
  EXPECT_TRUE(taken);
}

}  // namespace
}  // namespace npumem::core
