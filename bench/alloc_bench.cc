// ns per alloc+free pair on a cached working set: npumem::Allocator on the virtual
// NPU (backing none) beside malloc/free and mimalloc, single-threaded and with two
// threads sharing one heap. Each iteration frees the oldest block of a ring of 64
// live blocks and allocates another in its place, so after warm-up every request is
// served from memory the heap already holds. Each row's Time is ns per pair (per
// thread for threads:2; items_per_second counts pairs of all threads).
//
// fill/N and steady/N trace the cost against the number of live blocks (10^3 to
// 10^6): fill/N allocates N blocks into an empty heap (npumem: a fresh allocator, so
// every segment is a growth) and frees them; steady/N frees the oldest of N live
// blocks and allocates another. time_per_op is per allocation or free.
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/units.h"
#include "raw_heaps.h"

namespace npumem::bench {
namespace {

// Sizes as a model's activations and small tensors mix them.
constexpr std::array<std::size_t, 5> kSizes = {256, 4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB};
// Not a multiple of kSizes.size(): each freed block differs in size from its successor.
constexpr std::size_t kRingSize = 64;

// One shared allocator for every npumem benchmark, so the threaded runs share a heap.
Allocator& shared_allocator() {
  static Allocator allocator(make_device("sim"));
  return allocator;
}

struct NpumemHeap {
  void* allocate(std::size_t bytes) { return shared_allocator().allocate(bytes); }
  void deallocate(void* ptr) { shared_allocator().deallocate(ptr); }
};

struct SystemHeap {
  RawHeap heap = system_heap();
  void* allocate(std::size_t bytes) { return heap.allocate(bytes); }
  void deallocate(void* ptr) { heap.deallocate(ptr); }
};

struct Mimalloc {
  RawHeap heap = mimalloc_heap();
  void* allocate(std::size_t bytes) { return heap.allocate(bytes); }
  void deallocate(void* ptr) { heap.deallocate(ptr); }
};

// Each iteration frees the oldest block of the ring and allocates sizes[next] in its place.
template <typename Heap>
void run_ring(benchmark::State& state, std::span<const std::size_t> sizes) {
  Heap heap;
  std::array<void*, kRingSize> ring{};
  for (std::size_t i = 0; i < kRingSize; ++i) ring[i] = heap.allocate(sizes[i % sizes.size()]);
  std::size_t slot = 0;
  std::size_t size_index = kRingSize % sizes.size();
  for (auto _ : state) {
    heap.deallocate(ring[slot]);
    ring[slot] = heap.allocate(sizes[size_index]);
    benchmark::DoNotOptimize(ring[slot]);
    slot = slot + 1 == kRingSize ? 0 : slot + 1;
    size_index = size_index + 1 == sizes.size() ? 0 : size_index + 1;
  }
  for (void* ptr : ring) heap.deallocate(ptr);
  state.SetItemsProcessed(state.iterations());
}

template <typename Heap>
void BM_MixedSizes(benchmark::State& state) {
  run_ring<Heap>(state, kSizes);
}

// The floor: every request has the size of the block just freed. Arg: the size.
template <typename Heap>
void BM_OneSize(benchmark::State& state) {
  const std::array<std::size_t, 1> size = {static_cast<std::size_t>(state.range(0))};
  run_ring<Heap>(state, size);
}

// Small sizes, so 10^6 live blocks of malloc stay well under a GiB of host memory.
constexpr std::array<std::size_t, 4> kFillSizes = {256, 512, 768, 1024};

// Its own allocator per fill, on a device large enough for 10^6 blocks.
struct FreshNpumemHeap {
  Allocator allocator{make_device("sim:hbm=64G")};
  void* allocate(std::size_t bytes) { return allocator.allocate(bytes); }
  void deallocate(void* ptr) { allocator.deallocate(ptr); }
};

// Time per operation: a rate counter inverted (printed as seconds with an SI prefix).
void count_ops(benchmark::State& state, std::size_t ops_per_iteration) {
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(state.iterations() * ops_per_iteration),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <typename Heap>
void BM_Fill(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  std::vector<void*> blocks(count);
  for (auto _ : state) {
    state.PauseTiming();
    auto heap = std::make_unique<Heap>();
    state.ResumeTiming();
    for (std::size_t i = 0; i < count; ++i) blocks[i] = heap->allocate(kFillSizes[i % 4]);
    for (void* ptr : blocks) heap->deallocate(ptr);
    state.PauseTiming();
    heap.reset();
    state.ResumeTiming();
  }
  count_ops(state, 2 * count);
}

template <typename Heap>
void BM_Steady(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  auto heap = std::make_unique<Heap>();
  std::vector<void*> blocks(count);
  for (std::size_t i = 0; i < count; ++i) blocks[i] = heap->allocate(kFillSizes[i % 4]);
  std::size_t slot = 0;
  std::size_t size_index = 1;
  for (auto _ : state) {
    heap->deallocate(blocks[slot]);
    blocks[slot] = heap->allocate(kFillSizes[size_index]);
    slot = slot + 1 == count ? 0 : slot + 1;
    size_index = (size_index + 1) % kFillSizes.size();
  }
  for (void* ptr : blocks) heap->deallocate(ptr);
  count_ops(state, 2);
}

BENCHMARK_TEMPLATE(BM_MixedSizes, NpumemHeap)->Name("mixed/npumem");
BENCHMARK_TEMPLATE(BM_MixedSizes, SystemHeap)->Name("mixed/malloc");
BENCHMARK_TEMPLATE(BM_MixedSizes, Mimalloc)->Name("mixed/mimalloc");
BENCHMARK_TEMPLATE(BM_MixedSizes, NpumemHeap)->Name("mixed/npumem")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, SystemHeap)->Name("mixed/malloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, Mimalloc)->Name("mixed/mimalloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_OneSize, NpumemHeap)->Name("one_size/npumem")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, SystemHeap)->Name("one_size/malloc")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, Mimalloc)->Name("one_size/mimalloc")->Arg(512)->Arg(1 << 20);

BENCHMARK_TEMPLATE(BM_Fill, FreshNpumemHeap)
    ->Name("fill/npumem")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Fill, SystemHeap)
    ->Name("fill/malloc")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Fill, Mimalloc)
    ->Name("fill/mimalloc")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Steady, FreshNpumemHeap)
    ->Name("steady/npumem")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000);
BENCHMARK_TEMPLATE(BM_Steady, SystemHeap)
    ->Name("steady/malloc")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000);
BENCHMARK_TEMPLATE(BM_Steady, Mimalloc)
    ->Name("steady/mimalloc")
    ->RangeMultiplier(10)
    ->Range(1000, 1000000);

}  // namespace
}  // namespace npumem::bench

BENCHMARK_MAIN();
