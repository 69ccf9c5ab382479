// What observing costs the allocation fast path: ns per alloc+free pair with no
// observer, with the history recorder (without and with native backtraces, and
// attached then removed), with the leak detector and with an empty hook. Each pair is two events
// (alloc, free); the ns_per_event column is the row's time per event, so the recorder's cost per
// event is its row's ns_per_event minus the no-observer row's.
#include <benchmark/benchmark.h>

#include <array>
#include <memory>

#include "npumem/allocator.h"
#include "npumem/history.h"
#include "npumem/hooks.h"
#include "npumem/leak_detector.h"
#include "npumem/units.h"

namespace npumem::bench {
namespace {

constexpr std::size_t kRingSize = 64;
constexpr std::size_t kBytes = 4 * KiB;

// Frees the oldest block of a ring of live blocks and allocates another in its place:
// after warm-up every request is served from the cache (the fast path).
void run_pairs(benchmark::State& state, Allocator& allocator) {
  std::array<void*, kRingSize> ring{};
  for (void*& ptr : ring) ptr = allocator.allocate(kBytes);
  std::size_t slot = 0;
  for (auto _ : state) {
    allocator.deallocate(ring[slot]);
    ring[slot] = allocator.allocate(kBytes);
    benchmark::DoNotOptimize(ring[slot]);
    slot = slot + 1 == kRingSize ? 0 : slot + 1;
  }
  for (void* ptr : ring) allocator.deallocate(ptr);
  state.counters["ns_per_event"] = benchmark::Counter(
      2, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_NoObserver(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  run_pairs(state, allocator);
}

void BM_History(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  record_history(allocator, {.max_entries = 1 << 20});
  run_pairs(state, allocator);
}

// Recording switched off again: the allocator is back to testing an empty list.
void BM_HistoryRemoved(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  allocator.remove_observer(record_history(allocator));
  run_pairs(state, allocator);
}

void BM_HistoryWithBacktraces(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  record_history(allocator, {.max_entries = 1 << 16, .backtraces = true, .max_frames = 16});
  run_pairs(state, allocator);
}

void BM_LeakDetector(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  LeakDetector::attach(allocator);
  run_pairs(state, allocator);
}

void BM_EmptyHook(benchmark::State& state) {
  Allocator allocator(make_device("sim"));
  auto hooks = std::make_shared<Hooks>();
  hooks->on_alloc([](const Event& event) { benchmark::DoNotOptimize(event.bytes); });
  allocator.add_observer(hooks);
  run_pairs(state, allocator);
}

BENCHMARK(BM_NoObserver)->Name("pair/no_observer");
BENCHMARK(BM_History)->Name("pair/history");
BENCHMARK(BM_HistoryRemoved)->Name("pair/history_removed");
BENCHMARK(BM_HistoryWithBacktraces)->Name("pair/history_backtraces");
BENCHMARK(BM_LeakDetector)->Name("pair/leak_detector");
BENCHMARK(BM_EmptyHook)->Name("pair/empty_hook");

}  // namespace
}  // namespace npumem::bench

BENCHMARK_MAIN();
