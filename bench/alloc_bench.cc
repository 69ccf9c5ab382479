// ns per alloc+free pair on a cached working set: npumem::Allocator on the virtual
// NPU (backing none) beside malloc/free and mimalloc, single-threaded and with two
// threads sharing one heap. Each iteration frees the oldest block of a ring of 64
// live blocks and allocates another in its place, so after warm-up every request is
// served from memory the heap already holds. Each row's Time is ns per pair (per
// thread for threads:2; items_per_second counts pairs of all threads).
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <span>

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

BENCHMARK_TEMPLATE(BM_MixedSizes, NpumemHeap)->Name("mixed/npumem");
BENCHMARK_TEMPLATE(BM_MixedSizes, SystemHeap)->Name("mixed/malloc");
BENCHMARK_TEMPLATE(BM_MixedSizes, Mimalloc)->Name("mixed/mimalloc");
BENCHMARK_TEMPLATE(BM_MixedSizes, NpumemHeap)->Name("mixed/npumem")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, SystemHeap)->Name("mixed/malloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, Mimalloc)->Name("mixed/mimalloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_OneSize, NpumemHeap)->Name("one_size/npumem")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, SystemHeap)->Name("one_size/malloc")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, Mimalloc)->Name("one_size/mimalloc")->Arg(512)->Arg(1 << 20);

}  // namespace
}  // namespace npumem::bench

BENCHMARK_MAIN();
