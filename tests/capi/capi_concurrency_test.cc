// npumem_malloc / npumem_free from several threads: one allocator per device index
// even when the threads race to make it, and blocks freed by any thread.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "capi/handle.h"
#include "npumem/npumem.h"

namespace {

constexpr int kThreads = 2;
constexpr int kRounds = 2000;
constexpr int kDevice = 20;

TEST(CapiConcurrency, ThreadsRacingToFirstUseShareOneAllocator) {
  std::atomic<int> ready{0};
  std::array<std::vector<void*>, kThreads> kept;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int round = 0; round < kRounds; ++round) {
        const ssize_t size = 256 * (1 + (round + t) % 64);
        void* ptr = npumem_malloc(size, kDevice, nullptr);
        ASSERT_NE(ptr, nullptr) << npumem_last_error();
        if (round % 16 == 0) {
          kept[t].push_back(ptr);
        } else {
          npumem_free(ptr, size, kDevice, nullptr);
          ASSERT_STREQ(npumem_last_error(), "");
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  npumem_allocator_t* handle = nullptr;
  ASSERT_EQ(npumem_device_allocator(kDevice, &handle), NPUMEM_OK);
  EXPECT_EQ(handle->allocator->stats().allocation.all.current, kThreads * (kRounds / 16));
  // Blocks are freed by threads other than the ones that allocated them.
  const auto free_all = [](const std::vector<void*>& blocks) {
    for (void* ptr : blocks) {
      npumem_free(ptr, 0, kDevice, nullptr);
      EXPECT_STREQ(npumem_last_error(), "");
    }
  };
  std::thread([&] { free_all(kept[0]); }).join();
  free_all(kept[1]);
  EXPECT_EQ(handle->allocator->stats().allocated_bytes.all.current, 0);
}

}  // namespace
