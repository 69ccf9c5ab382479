// Per-thread front caches: statistics stay exact when read from another thread
// (peaks included) and when a lone thread counted apart (solo_counts.h), blocks
// cross threads, a thread's exit and empty_cache return what its cache keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/test_device.h"
#include "invariants.h"
#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// On the virtual NPU and on acl:0 over the test double of libascendcl.so.
class ThreadCache : public ::testing::TestWithParam<testing::Backend> {
 protected:
  // Backing::host where a test writes into its memory.
  std::shared_ptr<Device> npu(Backing backing = Backing::none) const {
    SimSpec spec;
    spec.hbm_bytes = 256 * MiB;
    spec.ddr_bytes = 0;
    spec.backing = backing;
    return testing::TestDevice(GetParam(), spec).device();
  }
};

// While one thread alone allocates, its cache works under the allocator's lock; from
// the second thread on each works under its own. The tests below want the latter: this
// thread makes the first cache, another thread the second (which a later thread takes
// over). Another thread alone would make the first, and this one would take it over.
void use_from_two_threads(Allocator& allocator) {
  allocator.deallocate(allocator.allocate(1));
  std::thread([&] { allocator.deallocate(allocator.allocate(1)); }).join();
}

// A thread that lives across steps (so its front cache does) and runs each step to
// completion before run() returns.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    run({});
    thread_.join();
  }
  void run(std::function<void()> step) {
    std::unique_lock lock(mutex_);
    step_ = std::move(step);
    pending_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !pending_; });
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return pending_; });
      const bool stop = !step_;
      if (step_) step_();
      pending_ = false;
      changed_.notify_all();
      if (stop) return;
    }
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  bool pending_ = false;
  std::function<void()> step_;
  std::thread thread_;
};

TEST_P(ThreadCache, StatsReadFromAnotherThreadAreExact) {
  Allocator allocator(npu());
  use_from_two_threads(allocator);
  Worker worker;
  std::vector<void*> blocks;
  worker.run([&] {
    for (int i = 0; i < 4; ++i) blocks.push_back(allocator.allocate(MiB));
    allocator.deallocate(blocks[3]);  // kept by the worker's cache
    allocator.deallocate(blocks[2]);
    blocks.resize(2);
    blocks.push_back(allocator.allocate(MiB - 100));  // served by the cache
  });
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.current, 3 * static_cast<std::int64_t>(MiB));
  EXPECT_EQ(stats.allocated_bytes.all.peak, 4 * static_cast<std::int64_t>(MiB));
  const std::int64_t warm_up = 2 * 512;  // use_from_two_threads's blocks, rounded
  EXPECT_EQ(stats.allocated_bytes.all.allocated, 5 * static_cast<std::int64_t>(MiB) + warm_up);
  EXPECT_EQ(stats.allocated_bytes.all.freed, 2 * static_cast<std::int64_t>(MiB) + warm_up);
  EXPECT_EQ(stats.requested_bytes.all.current, 3 * static_cast<std::int64_t>(MiB) - 100);
  EXPECT_EQ(stats.allocation.all.current, 3);
  EXPECT_EQ(stats.allocation.all.allocated, 7);
  EXPECT_EQ(stats.active_bytes.by_kind[0].current, 3 * static_cast<std::int64_t>(MiB));
  worker.run([&] {
    for (void* p : blocks) allocator.deallocate(p);
  });
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  EXPECT_EQ(allocator.stats().allocation.all.freed, 7);
}

// A cache's credit (its own frees) must not let it pass a peak another thread
// reached meanwhile without that peak being raised.
TEST_P(ThreadCache, PeakRaisedByAnotherThreadStaysExact) {
  Allocator allocator(npu());
  Worker a;
  Worker b;
  std::vector<void*> mine;
  a.run([&] {
    for (int i = 0; i < 3; ++i) mine.push_back(allocator.allocate(MiB));
    allocator.deallocate(mine[2]);
    allocator.deallocate(mine[1]);  // a's cache holds 2 MiB of credit
    mine.resize(1);
  });
  void* theirs = nullptr;
  b.run([&] { theirs = allocator.allocate(MiB); });  // live: 2 MiB, peak 3 MiB
  a.run([&] {
    mine.push_back(allocator.allocate(MiB));  // 3 MiB live
    mine.push_back(allocator.allocate(MiB));  // 4 MiB live: a new peak
    allocator.deallocate(mine.back());        // gone before anyone reads it
    mine.pop_back();
  });
  Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.current, 3 * static_cast<std::int64_t>(MiB));
  EXPECT_EQ(stats.allocated_bytes.all.peak, 4 * static_cast<std::int64_t>(MiB));
  EXPECT_EQ(stats.allocation.all.peak, 4);

  allocator.reset_peak_stats();  // peak 3 MiB; a's cache still holds a block and credit
  a.run([&] {
    mine.push_back(allocator.allocate(MiB));  // 4 MiB: past the reset peak
    allocator.deallocate(mine.back());
    mine.pop_back();
  });
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.peak, 4 * static_cast<std::int64_t>(MiB));
  a.run([&] {
    for (void* p : mine) allocator.deallocate(p);
  });
  b.run([&] { allocator.deallocate(theirs); });
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
}

// A kept block goes out without the lock only on credit: after an allocation under
// the lock reached the peak, taking the kept block again would pass it, so it must go
// the locked way, which raises the peak (read after the block is gone again).
TEST_P(ThreadCache, KeptBlockPastThePeakGoesTheLockedWay) {
  Allocator allocator(npu());
  void* a = allocator.allocate(4096);
  void* room = allocator.allocate(70000);
  // Freed by another thread: to the pool, so the 70000 B below need no growth (which
  // would return kept blocks to the pools first).
  std::thread([&] { allocator.deallocate(room); }).join();
  allocator.reset_peak_stats();                    // peak: a's 4 KiB
  allocator.deallocate(allocator.allocate(4096));  // kept, with 4 KiB of credit
  void* c = allocator.allocate(70000);             // locked: a new peak, the credit goes
  allocator.deallocate(allocator.allocate(4096));  // the kept block: past that peak
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.requested_bytes.all.peak, 4096 + 70000 + 4096);
  EXPECT_EQ(stats.allocation.all.peak, 3);
  allocator.deallocate(a);
  allocator.deallocate(c);
}

// Churn of repeated sizes of both kinds, served by a thread's cache and by the locked
// path in turn: the statistics (current, peaks of every split, totals) equal a model's
// whenever read, across peak resets; `pool` (when set) is the pool allocated from,
// whose statistics must equal the model's too.
void expect_exact_under_churn(Allocator& allocator, const std::string& pool = "") {
  allocator.reset_peak_stats();  // a warm-up's byte is gone: every peak is 0
  const Stats before = allocator.stats();
  constexpr std::array<std::size_t, 4> kSizes = {1000, 4096, 70000, 3 * MiB};
  constexpr int kSmall = static_cast<int>(PoolKind::small);
  constexpr int kLarge = static_cast<int>(PoolKind::large);
  constexpr int kHbm = static_cast<int>(Tier::hbm);
  struct Model {
    std::int64_t current = 0, peak = 0, added = 0, removed = 0;
    void add(std::int64_t amount) {
      peak = std::max(peak, current += amount);
      (amount > 0 ? added : removed) += amount > 0 ? amount : -amount;
    }
  };
  Model requested, small_requested, large_requested, count, large_count;
  const auto expect_equal = [&](const Stats& stats, int step, std::int64_t added_before) {
    ASSERT_EQ(stats.requested_bytes.all.peak, requested.peak) << "step " << step;
    ASSERT_EQ(stats.requested_bytes.all.current, requested.current) << "step " << step;
    ASSERT_EQ(stats.requested_bytes.by_tier[kHbm].peak, requested.peak) << "step " << step;
    ASSERT_EQ(stats.requested_bytes.by_kind[kSmall].peak, small_requested.peak) << step;
    ASSERT_EQ(stats.requested_bytes.by_kind[kLarge].peak, large_requested.peak) << step;
    ASSERT_EQ(stats.requested_bytes.by_kind[kLarge].current, large_requested.current) << step;
    ASSERT_EQ(stats.allocation.all.peak, count.peak) << "step " << step;
    ASSERT_EQ(stats.allocation.by_kind[kLarge].peak, large_count.peak) << "step " << step;
    ASSERT_EQ(stats.allocation.all.allocated - added_before, count.added) << "step " << step;
    ASSERT_EQ(stats.allocation.all.allocated - stats.allocation.all.freed, count.current) << step;
  };
  const auto pool_stats = [&] {
    for (const PoolInfo& info : allocator.pools()) {
      if (info.name == pool) return info.stats;
    }
    ADD_FAILURE() << "no pool " << pool;
    return Stats{};
  };
  const std::int64_t pool_added_before = pool.empty() ? 0 : pool_stats().allocation.all.allocated;
  std::vector<std::pair<void*, std::size_t>> live;
  std::uint64_t state = 11;
  for (int step = 0; step < 20000; ++step) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const bool free_one = !live.empty() && (live.size() > 40 || (state >> 33) % 2 == 0);
    std::int64_t sign = 1;
    std::size_t bytes = 0;
    if (free_one) {
      const std::size_t victim = (state >> 40) % live.size();
      bytes = live[victim].second;
      allocator.deallocate(live[victim].first);
      live[victim] = live.back();
      live.pop_back();
      sign = -1;
    } else {
      bytes = kSizes[(state >> 45) % kSizes.size()];
      live.emplace_back(allocator.allocate(bytes), bytes);
    }
    const auto amount = sign * static_cast<std::int64_t>(bytes);
    requested.add(amount);
    (bytes < MiB ? small_requested : large_requested).add(amount);
    count.add(sign);
    if (bytes >= MiB) large_count.add(sign);
    if (step % 97 == 0) {
      ASSERT_NO_FATAL_FAILURE(
          expect_equal(allocator.stats(), step, before.allocation.all.allocated));
      if (!pool.empty()) {
        ASSERT_NO_FATAL_FAILURE(expect_equal(pool_stats(), step, pool_added_before));
      }
    }
    if (step % 1999 == 0) {
      allocator.reset_peak_stats();
      for (Model* model : {&requested, &small_requested, &large_requested, &count, &large_count}) {
        model->peak = model->current;
      }
    }
  }
  for (const auto& [ptr, bytes] : live) allocator.deallocate(ptr);
  EXPECT_EQ(allocator.stats().requested_bytes.all.current, 0);
}

TEST_P(ThreadCache, StatisticsStayExactUnderChurn) {
  Allocator allocator(npu());
  use_from_two_threads(allocator);
  expect_exact_under_churn(allocator);
}

// A lone thread counts its allocations and frees apart from the statistics until
// they are read: what it counted must read the same.
TEST_P(ThreadCache, LoneThreadStatisticsStayExactUnderChurn) {
  Allocator allocator(npu());
  expect_exact_under_churn(allocator);
}

TEST_P(ThreadCache, LoneThreadPoolStatisticsStayExactUnderChurn) {
  Allocator allocator(npu());
  allocator.create_pool("scratch");
  PoolScope scope(allocator, "scratch");
  expect_exact_under_churn(allocator, "scratch");
}

// Kept blocks taken back after a peak reset pass the reset peak between two reads:
// the peak read next must be the highest value reached, not the value then.
TEST_P(ThreadCache, LoneThreadPassingAResetPeakRaisesIt) {
  Allocator allocator(npu());
  void* a = allocator.allocate(4096);
  void* b = allocator.allocate(4096);
  void* large = allocator.allocate(3 * MiB);
  allocator.deallocate(a);       // kept
  allocator.deallocate(b);       // kept
  allocator.reset_peak_stats();  // peaks: the large block's
  a = allocator.allocate(4096);
  b = allocator.allocate(4096);
  allocator.deallocate(b);
  allocator.deallocate(large);  // the all split drops below its peak before the read
  const Stats stats = allocator.stats();
  constexpr int kSmall = static_cast<int>(PoolKind::small);
  EXPECT_EQ(stats.allocated_bytes.all.peak, 3 * static_cast<std::int64_t>(MiB) + 8192);
  EXPECT_EQ(stats.allocated_bytes.by_tier[static_cast<int>(Tier::hbm)].peak,
            3 * static_cast<std::int64_t>(MiB) + 8192);
  EXPECT_EQ(stats.allocated_bytes.by_kind[kSmall].peak, 8192);
  EXPECT_EQ(stats.allocation.all.peak, 3);
  EXPECT_EQ(stats.allocated_bytes.all.current, 4096);
  EXPECT_EQ(stats.allocation.all.allocated, 5);
  EXPECT_EQ(stats.allocation.all.freed, 4);
  allocator.deallocate(a);
}

// A request the cache cannot serve first gives back the kept blocks best fit could use
// (as large as it, or beside free space), so it finds the free space best fit would
// without a cache: here the kept block merged with the rest of the segment (kept, it
// left the request that rest). Alone (counted apart) and beside another thread.
TEST_P(ThreadCache, AMissGivesTheKeptBlocksBackFirst) {
  for (const bool two_threads : {false, true}) {
    SCOPED_TRACE(two_threads ? "two threads" : "lone thread");
    Allocator allocator(npu());
    if (two_threads) use_from_two_threads(allocator);
    // In one small segment, the rest of it free after them.
    void* a = allocator.allocate(256 * KiB);
    void* b = allocator.allocate(256 * KiB);
    ASSERT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 256 * KiB);
    allocator.deallocate(b);
    void* c = allocator.allocate(512 * KiB);
    EXPECT_EQ(c, b);
    EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(2 * MiB));
    // The same size takes a kept block back.
    allocator.deallocate(a);
    EXPECT_EQ(allocator.allocate(256 * KiB), a);
    allocator.deallocate(a);
    allocator.deallocate(c);
    EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  }
}

// A lone thread's cache keeps one large block with no free neighbour until its next
// miss or any other locked operation, which gives it back first (thread_cache.h). The
// pools then see what they would without it, so placement is best fit's: the same
// addresses as an allocator whose statistics are read after every call (any locked
// operation gives the block back; stats_leaving_caches() keeps the small blocks the
// cache holds). Sizes of both pools, a few of them repeating.
TEST_P(ThreadCache, ALoneThreadKeepingALargeBlockPlacesAsBestFitWould) {
  if (GetParam() != testing::Backend::sim) {
    // Its segments come at addresses in no fixed order, so two allocators' best fits
    // break ties between them differently.
    GTEST_SKIP() << "needs segment addresses in the order the segments were made";
  }
  Allocator kept(npu());
  Allocator read(npu());
  constexpr std::array<std::size_t, 7> kSizes = {6 * MiB, 8 * MiB,  8 * MiB, 12 * MiB,
                                                 2 * MiB, 64 * KiB, 26 * MiB};
  std::vector<std::pair<void*, void*>> live;
  std::uintptr_t kept_base = 0;
  std::uintptr_t read_base = 0;
  std::uint64_t state = 5;
  for (int step = 0; step < 4000; ++step) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    if (!live.empty() && (live.size() > 12 || (state >> 33) % 2 == 0)) {
      const std::size_t victim = (state >> 40) % live.size();
      kept.deallocate(live[victim].first);
      read.deallocate(live[victim].second);
      live[victim] = live.back();
      live.pop_back();
    } else {
      const std::size_t bytes = kSizes[(state >> 45) % kSizes.size()];
      void* a = kept.allocate(bytes);
      void* b = read.allocate(bytes);
      if (kept_base == 0) {
        kept_base = reinterpret_cast<std::uintptr_t>(a);
        read_base = reinterpret_cast<std::uintptr_t>(b);
      }
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(a) - kept_base,
                reinterpret_cast<std::uintptr_t>(b) - read_base)
          << "step " << step << ": " << bytes << " bytes";
      live.emplace_back(a, b);
    }
    read.stats_leaving_caches();
  }
  EXPECT_EQ(kept.stats().reserved_bytes.all.peak, read.stats().reserved_bytes.all.peak);
  for (const auto& [a, b] : live) {
    kept.deallocate(a);
    read.deallocate(b);
  }
}

// The large block a lone thread keeps is memory the pools may need: a request that
// only fits once its segment goes back to the device still succeeds.
TEST_P(ThreadCache, ALoneThreadsKeptLargeBlockIsReleasedWhenMemoryRunsShort) {
  Allocator allocator(npu());                   // 256 MiB of HBM, no DDR
  void* alone = allocator.allocate(100 * MiB);  // a segment of its own: no neighbour
  allocator.deallocate(alone);
  void* big = allocator.allocate(200 * MiB);
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, static_cast<std::int64_t>(200 * MiB));
  allocator.deallocate(big);
}

TEST_P(ThreadCache, BlocksFreedByAnotherThread) {
  Allocator allocator(npu());
  std::map<void*, std::size_t> live;
  Worker a;
  Worker b;
  std::vector<void*> made;
  a.run([&] {
    for (int i = 0; i < 32; ++i) made.push_back(allocator.allocate(4 * KiB * (1 + i % 3)));
    allocator.deallocate(made.back());  // kept by a's cache
    made.pop_back();
  });
  b.run([&] {
    for (void* p : made) allocator.deallocate(p);
  });
  testing::expect_consistent(allocator, live);
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  EXPECT_EQ(allocator.stats().allocation.all.freed, 32);
  // b does not own a's blocks: freeing one twice is still reported.
  void* p = nullptr;
  a.run([&] { p = allocator.allocate(KiB); });
  b.run([&] { allocator.deallocate(p); });
  b.run([&] { EXPECT_THROW(allocator.deallocate(p), InvalidPointer); });
}

TEST_P(ThreadCache, DoubleFreeOfAKeptBlockIsReported) {
  Allocator allocator(npu());
  void* p = allocator.allocate(KiB);
  allocator.deallocate(p);  // kept by this thread's cache
  try {
    allocator.deallocate(p);
    FAIL() << "no error";
  } catch (const InvalidPointer& e) {
    EXPECT_NE(std::string(e.what()).find("double free"), std::string::npos) << e.what();
  }
}

TEST_P(ThreadCache, ThreadExitReturnsKeptBlocks) {
  Allocator allocator(npu());
  void* survivor = nullptr;
  std::thread([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 8; ++i) blocks.push_back(allocator.allocate(64 * KiB));
    survivor = blocks.back();
    blocks.pop_back();
    for (void* p : blocks) allocator.deallocate(p);
  }).join();
  std::uint64_t kept_bytes = 0;
  for (const SegmentInfo& segment : allocator.snapshot()) {
    for (const BlockInfo& block : segment.blocks) {
      if (block.allocated) kept_bytes += block.size;
    }
  }
  EXPECT_EQ(kept_bytes, 64 * KiB);  // the survivor only: nothing stayed in a cache
  testing::expect_consistent(allocator, {{survivor, 64 * KiB}});
  // The exited thread's blocks are anyone's to free; the next thread takes over its cache.
  std::thread([&] { allocator.deallocate(survivor); }).join();
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
  std::thread([&] { allocator.deallocate(allocator.allocate(KiB)); }).join();
  EXPECT_EQ(allocator.stats().allocation.all.allocated, 9);
}

TEST_P(ThreadCache, EmptyCacheReleasesWhatCachesKeep) {
  Allocator allocator(npu());
  use_from_two_threads(allocator);
  Worker worker;
  worker.run([&] {
    for (int i = 0; i < 4; ++i) allocator.deallocate(allocator.allocate(MiB));
    // Large blocks are kept too while several threads allocate.
    void* large = allocator.allocate(8 * MiB);
    allocator.deallocate(large);
    EXPECT_EQ(allocator.allocate(8 * MiB), large);
    allocator.deallocate(large);
  });
  EXPECT_EQ(allocator.stats().allocated_bytes.by_kind[1].current, 0);
  EXPECT_GT(allocator.stats().reserved_bytes.all.current, 0);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
  worker.run([&] { allocator.deallocate(allocator.allocate(MiB)); });
  EXPECT_EQ(allocator.stats().allocated_bytes.all.current, 0);
}

TEST_P(ThreadCache, ThreadOutlivesTheAllocator) {
  auto allocator = std::make_unique<Allocator>(npu());
  Worker worker;
  worker.run([&] { allocator->deallocate(allocator->allocate(KiB)); });
  allocator.reset();
  // The worker's exit must not touch the destroyed allocator; a new one works there.
  Allocator next(npu());
  worker.run([&] { next.deallocate(next.allocate(KiB)); });
  EXPECT_EQ(next.stats().allocation.all.allocated, 1);
}

// Threads free each other's blocks while another reads statistics: every read is
// consistent (peak >= current >= 0) and the totals end exact.
TEST_P(ThreadCache, CrossThreadFreesWithConcurrentReaders) {
  Allocator allocator(npu());
  std::mutex handoff_mutex;
  std::vector<void*> handoff;  // blocks one thread allocated for another to free
  std::atomic<int> running{2};
  constexpr int kSteps = 5000;
  auto work = [&](unsigned seed) {
    std::vector<void*> mine;
    for (int step = 0; step < kSteps; ++step) {
      const std::size_t bytes = 512 * (1 + (seed * 7 + static_cast<unsigned>(step)) % 8);
      mine.push_back(allocator.allocate(bytes));
      if (mine.size() > 16) {
        allocator.deallocate(mine.front());  // kept by this thread's cache
        mine.erase(mine.begin());
      }
      if (step % 3 == 0) {
        std::lock_guard lock(handoff_mutex);
        handoff.push_back(mine.back());
        mine.pop_back();
      }
      void* theirs = nullptr;
      {
        std::lock_guard lock(handoff_mutex);
        if (!handoff.empty() && step % 2 == 0) {
          theirs = handoff.back();
          handoff.pop_back();
        }
      }
      if (theirs != nullptr) allocator.deallocate(theirs);
    }
    for (void* p : mine) allocator.deallocate(p);
    --running;
  };
  std::thread reader([&] {
    while (running.load() > 0) {
      const Stats stats = allocator.stats();
      EXPECT_GE(stats.allocated_bytes.all.current, 0);
      EXPECT_GE(stats.allocated_bytes.all.peak, stats.allocated_bytes.all.current);
      EXPECT_GE(stats.allocation.all.peak, stats.allocation.all.current);
    }
  });
  std::thread a(work, 1u), b(work, 2u);
  a.join();
  b.join();
  reader.join();
  for (void* p : handoff) allocator.deallocate(p);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.current, 0);
  EXPECT_EQ(stats.requested_bytes.all.current, 0);
  EXPECT_EQ(stats.allocation.all.allocated, 2 * kSteps);
  EXPECT_EQ(stats.allocation.all.freed, 2 * kSteps);
  testing::expect_consistent(allocator, {});
}

// A lone thread's allocations and frees take the allocator's lock the owner's way
// (biased_lock.h); a thread that never allocates reads statistics, snapshots and
// empties the cache meanwhile. Each such call excludes the lone thread: every read is
// consistent, the lone thread's memory keeps its marks, and the totals end exact.
TEST_P(ThreadCache, LoneThreadChurnsWhileAnotherReadsAndEmptiesTheCache) {
  const std::shared_ptr<Device> device = npu(Backing::host);
  Allocator allocator(device);
  std::atomic<bool> running{true};
  constexpr int kSteps = 20000;
  std::thread lone([&] {
    std::vector<std::pair<unsigned char*, unsigned char>> mine;
    for (int step = 0; step < kSteps; ++step) {
      if (mine.size() > 24 || (!mine.empty() && step % 3 == 0)) {
        const auto [p, mark] = mine[static_cast<std::size_t>(step) % mine.size()];
        ASSERT_TRUE(testing::holds(*device, p, mark, 1)) << "step " << step;
        allocator.deallocate(p);
        std::erase_if(mine, [p = p](const auto& held) { return held.first == p; });
      } else {
        const std::size_t bytes = step % 50 == 0 ? 3 * MiB : 512 * (1 + step % 8);
        auto* p = static_cast<unsigned char*>(allocator.allocate(bytes));
        const auto mark = static_cast<unsigned char>(1 + step % 251);
        testing::fill(*device, p, mark, 1);
        mine.emplace_back(p, mark);
      }
    }
    for (const auto& [p, mark] : mine) allocator.deallocate(p);
    running.store(false);
  });
  int reads = 0;
  while (running.load()) {
    const Stats stats = allocator.stats();
    ASSERT_GE(stats.allocated_bytes.all.current, 0);
    ASSERT_GE(stats.allocated_bytes.all.peak, stats.allocated_bytes.all.current);
    ASSERT_EQ(stats.allocation.all.current,
              stats.allocation.all.allocated - stats.allocation.all.freed);
    ASSERT_GE(stats.reserved_bytes.all.current, stats.allocated_bytes.all.current);
    if (++reads % 16 == 0) allocator.empty_cache();
    if (reads % 64 == 0) {
      std::size_t live_blocks = 0;
      for (const SegmentInfo& segment : allocator.snapshot()) {
        live_blocks += static_cast<std::size_t>(
            std::count_if(segment.blocks.begin(), segment.blocks.end(),
                          [](const BlockInfo& block) { return block.allocated; }));
      }
      ASSERT_LE(live_blocks, 25u);  // the lone thread holds at most 25
    }
  }
  lone.join();
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes.all.current, 0);
  EXPECT_EQ(stats.allocation.all.allocated, stats.allocation.all.freed);
  testing::expect_consistent(allocator, {});
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes.all.current, 0);
}

class CountingObserver : public AllocatorObserver {
 public:
  void on_event(const Event& event) override {
    if (event.kind == EventKind::alloc) ++allocs;
    if (event.kind == EventKind::free) ++frees;
  }
  int allocs = 0;
  int frees = 0;
};

TEST_P(ThreadCache, ObserversSeeEveryEvent) {
  for (const bool shared : {false, true}) {
    Allocator allocator(npu());
    if (shared) use_from_two_threads(allocator);
    allocator.deallocate(allocator.allocate(KiB));  // leaves a kept block and credit
    auto observer = std::make_shared<CountingObserver>();
    allocator.add_observer(observer);
    for (int i = 0; i < 5; ++i) allocator.deallocate(allocator.allocate(KiB));
    EXPECT_EQ(observer->allocs, 5) << "shared " << shared;
    EXPECT_EQ(observer->frees, 5) << "shared " << shared;
  }
}

// A lone thread stops counting apart while an observer watches and starts again once
// it is removed: the observer sees exactly the events in between, and the statistics
// read after stay exact (peaks too).
TEST_P(ThreadCache, LoneThreadCountsExactlyAcrossAnObserver) {
  Allocator allocator(npu());
  void* held = allocator.allocate(8 * KiB);
  allocator.deallocate(allocator.allocate(KiB));  // leaves a kept block
  auto observer = std::make_shared<CountingObserver>();
  allocator.add_observer(observer);
  for (int i = 0; i < 3; ++i) allocator.deallocate(allocator.allocate(KiB));
  allocator.remove_observer(observer);
  void* second = allocator.allocate(KiB);  // the kept block again, counted apart
  allocator.deallocate(allocator.allocate(2 * KiB));
  EXPECT_EQ(observer->allocs, 3);
  EXPECT_EQ(observer->frees, 3);
  const Stats stats = allocator.stats();
  EXPECT_EQ(stats.allocation.all.allocated, 7);
  EXPECT_EQ(stats.allocation.all.freed, 5);
  EXPECT_EQ(stats.allocation.all.current, 2);
  EXPECT_EQ(stats.allocation.all.peak, 3);
  EXPECT_EQ(stats.allocated_bytes.all.current, static_cast<std::int64_t>(9 * KiB));
  EXPECT_EQ(stats.allocated_bytes.all.peak, static_cast<std::int64_t>(11 * KiB));
  allocator.deallocate(second);
  allocator.deallocate(held);
  testing::expect_consistent(allocator, {});
}

// A lone thread's way serves a kept block only while the thread last used this
// allocator and counts in the pool counted apart; else the rest of the path does (a
// search for the cache, a fold). A thread that switches allocator and pool on every
// call goes that way each time: blocks still come back from the cache, and every
// statistic reads as if each call had been counted at once.
TEST_P(ThreadCache, ALoneThreadSwitchingAllocatorAndPoolOnEveryCallCountsExactly) {
  Allocator first(npu());
  Allocator second(npu());
  first.create_pool("scratch");
  void* kept_default = first.allocate(4 * KiB);
  void* kept_scratch = nullptr;
  {
    PoolScope scope(first, "scratch");
    kept_scratch = first.allocate(4 * KiB);
  }
  void* kept_second = second.allocate(4 * KiB);
  for (int round = 0; round < 50; ++round) {
    first.deallocate(kept_default);
    second.deallocate(kept_second);
    {
      PoolScope scope(first, "scratch");
      first.deallocate(kept_scratch);
      EXPECT_EQ(first.allocate(4 * KiB), kept_scratch) << "round " << round;
    }
    EXPECT_EQ(second.allocate(4 * KiB), kept_second) << "round " << round;
    EXPECT_EQ(first.allocate(4 * KiB), kept_default) << "round " << round;
  }
  const Stats stats = first.stats();
  EXPECT_EQ(stats.allocation.all.allocated, 102);
  EXPECT_EQ(stats.allocation.all.freed, 100);
  EXPECT_EQ(stats.allocation.all.current, 2);
  EXPECT_EQ(stats.allocation.all.peak, 2);
  EXPECT_EQ(stats.allocated_bytes.all.peak, static_cast<std::int64_t>(8 * KiB));
  for (const PoolInfo& info : first.pools()) {
    EXPECT_EQ(info.stats.allocation.all.allocated, 51) << info.name;
    EXPECT_EQ(info.stats.allocation.all.current, 1) << info.name;
    EXPECT_EQ(info.stats.allocated_bytes.all.peak, static_cast<std::int64_t>(4 * KiB)) << info.name;
  }
  EXPECT_EQ(second.stats().allocation.all.allocated, 51);
  EXPECT_EQ(second.stats().allocation.all.peak, 1);
  first.deallocate(kept_default);
  {
    PoolScope scope(first, "scratch");
    first.deallocate(kept_scratch);
  }
  second.deallocate(kept_second);
  testing::expect_consistent(first, {});
  testing::expect_consistent(second, {});
}

INSTANTIATE_TEST_SUITE_P(Devices, ThreadCache, ::testing::ValuesIn(testing::kBackends),
                         [](const auto& info) { return testing::backend_name(info.param); });

}  // namespace
}  // namespace npumem
