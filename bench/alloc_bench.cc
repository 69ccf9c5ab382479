// ns per alloc+free pair on a cached working set: npumem::Allocator on the virtual
// NPU (backing none) beside malloc/free and mimalloc; one thread on a heap
// of its own, and two threads sharing one heap. Each iteration frees the oldest block
// of a ring of 64 live blocks and allocates another in its place, so after warm-up
// every request is served from memory the heap already holds. Each row's Time is ns
// per pair (per thread for threads:2; items_per_second counts pairs of all threads).
// The run ends with the ratios the targets are stated in (RatioReporter).
//
// fill/N and steady/N trace the cost against the number of live blocks (10^3 to
// 10^6): fill/N allocates N blocks into an empty heap (npumem: a fresh allocator, so
// every segment is a growth) and frees them; steady/N frees the oldest of N live
// blocks and allocates another. time_per_op is per allocation or free.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>
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

// A fresh allocator per run, so one thread's rows measure the path a lone thread
// takes (the default device: 64 GiB of HBM, room for 10^6 blocks).
struct NpumemHeap {
  Allocator allocator{make_device("sim")};
  void* allocate(std::size_t bytes) { return allocator.allocate(bytes); }
  void deallocate(void* ptr) { allocator.deallocate(ptr); }
};

// One allocator for the threads of the threads:2 rows: they share its heap.
Allocator& shared_allocator() {
  static Allocator allocator(make_device("sim"));
  return allocator;
}

struct SharedNpumemHeap {
  void* allocate(std::size_t bytes) { return shared_allocator().allocate(bytes); }
  void deallocate(void* ptr) { shared_allocator().deallocate(ptr); }
};

template <RawHeap (*make)()>
struct Raw {
  RawHeap heap = make();
  void* allocate(std::size_t bytes) { return heap.allocate(bytes); }
  void deallocate(void* ptr) { heap.deallocate(ptr); }
};
using SystemHeap = Raw<system_heap>;
using Mimalloc = Raw<mimalloc_heap>;

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
BENCHMARK_TEMPLATE(BM_MixedSizes, SharedNpumemHeap)
    ->Name("mixed/npumem")
    ->Threads(2)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, SystemHeap)->Name("mixed/malloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_MixedSizes, Mimalloc)->Name("mixed/mimalloc")->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_OneSize, NpumemHeap)->Name("one_size/npumem")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, SystemHeap)->Name("one_size/malloc")->Arg(512)->Arg(1 << 20);
BENCHMARK_TEMPLATE(BM_OneSize, Mimalloc)->Name("one_size/mimalloc")->Arg(512)->Arg(1 << 20);

BENCHMARK_TEMPLATE(BM_Fill, NpumemHeap)
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
BENCHMARK_TEMPLATE(BM_Steady, NpumemHeap)
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

// The console's rows, then the ratios the targets are stated in, all from this run:
// npumem's time per pair against each heap's, and two threads' throughput against one.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(isatty(STDOUT_FILENO) != 0 ? OO_ColorTabular : OO_Tabular) {}
  // A row's rate: its median over --benchmark_repetitions, else its run's.
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.error_occurred || (run.run_type != Run::RT_Iteration && !median)) continue;
      const auto rate = run.counters.find("items_per_second");
      if (rate != run.counters.end()) pairs_per_second_[run.run_name.str()] = rate->second;
    }
  }
  void Finalize() override {
    print_ratio_table("npumem's time per pair / the heap's (same row, one thread)",
                      {"mixed", "one_size/*/512", "one_size/*/1048576"},
                      [this](const std::string& row, const std::string& heap) {
                        return ratio(name(row, heap), name(row, "npumem"));
                      });
    print_ratio_table("two threads' pairs per second / one thread's (mixed row)", {"mixed"},
                      [this](const std::string&, const std::string& heap) {
                        return ratio("mixed/" + heap + "/real_time/threads:2", "mixed/" + heap);
                      });
    ConsoleReporter::Finalize();
  }

 private:
  static std::string name(const std::string& row, const std::string& heap) {
    const auto star = row.find('*');
    return star == std::string::npos ? row + "/" + heap
                                     : row.substr(0, star) + heap + row.substr(star + 1);
  }
  // numerator's rate / denominator's rate; NaN when either row did not run.
  double ratio(const std::string& numerator, const std::string& denominator) const {
    const auto top = pairs_per_second_.find(numerator);
    const auto bottom = pairs_per_second_.find(denominator);
    if (top == pairs_per_second_.end() || bottom == pairs_per_second_.end()) return std::nan("");
    return top->second / bottom->second;
  }
  template <typename Ratio>
  void print_ratio_table(const char* title, const std::vector<std::string>& rows,
                         Ratio&& ratio_of) const {
    static constexpr std::array<const char*, 3> kHeaps = {"npumem", "malloc", "mimalloc"};
    std::printf("\n%s\n%-20s", title, "row");
    for (const char* heap : kHeaps) std::printf(" %9s", heap);
    std::printf("\n");
    for (const std::string& row : rows) {
      std::printf("%-20s", row.c_str());
      for (const char* heap : kHeaps) std::printf(" %9.2f", ratio_of(row, heap));
      std::printf("\n");
    }
  }

  std::map<std::string, double> pairs_per_second_;
};

}  // namespace
}  // namespace npumem::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  npumem::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
