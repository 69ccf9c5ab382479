// Replays each shared trace through npumem (the replay engine, virtual NPU with
// backing none) and the same event sequence through malloc/free and mimalloc; prints
// ns per event for each (best of --repeat runs) and npumem's overhead ratio.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "npumem/config.h"
#include "npumem/units.h"
#include "raw_heaps.h"
#include "replay.h"
#include "trace.h"

namespace npumem::bench {
namespace {

using cli::Trace;
using cli::TraceEvent;
using cli::TraceOp;
using Clock = std::chrono::steady_clock;

// The same loop shape as the replay engine: pool switches and markers are skipped.
double raw_heap_ns_per_event(const Trace& trace, const RawHeap& heap) {
  std::vector<void*> pointers(trace.allocations, nullptr);
  const Clock::time_point start = Clock::now();
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::alloc) {
      pointers[event.index] = heap.allocate(event.bytes);
    } else if (event.op == TraceOp::free) {
      heap.deallocate(pointers[event.index]);
      pointers[event.index] = nullptr;
    }
  }
  const auto elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  for (void* ptr : pointers) heap.deallocate(ptr);
  return elapsed / static_cast<double>(trace.memory_events());
}

double best_raw_heap(const Trace& trace, const RawHeap& heap, int repeat) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeat; ++i) best = std::min(best, raw_heap_ns_per_event(trace, heap));
  return best;
}

// The fastest of `repeat` replays; its figures other than timing are all the same.
cli::ReplayResult best_npumem(const Trace& trace, const cli::ReplayOptions& options, int repeat) {
  cli::ReplayResult best = cli::replay_trace(trace, options);
  for (int i = 1; i < repeat; ++i) {
    cli::ReplayResult run = cli::replay_trace(trace, options);
    if (run.ns_per_event < best.ns_per_event) best = std::move(run);
  }
  return best;
}

std::vector<std::filesystem::path> trace_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() == ".trace") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void print_row(const std::filesystem::path& file, const cli::ReplayOptions& options, int repeat) {
  const Trace trace = cli::read_trace(file.string());
  const cli::ReplayResult npumem = best_npumem(trace, options, repeat);
  const double malloc_ns = best_raw_heap(trace, system_heap(), repeat);
  const double mimalloc_ns = best_raw_heap(trace, mimalloc_heap(), repeat);
  std::printf("%-20s %8zu %10.1f %10.1f %10.1f %9.3f %12s %12s %s\n", file.stem().string().c_str(),
              trace.memory_events(), npumem.ns_per_event, malloc_ns, mimalloc_ns,
              npumem.overhead_ratio(), format_bytes(npumem.peak_requested_bytes).c_str(),
              format_bytes(npumem.peak_reserved_bytes()).c_str(),
              npumem.completed() ? "" : "(stopped: out of memory)");
}

}  // namespace
}  // namespace npumem::bench

int main(int argc, char** argv) {
  CLI::App app{"Replay the shared traces through npumem, malloc and mimalloc"};
  std::string shared_dir = NPUMEM_SHARED_DIR;
  std::string device_spec = "sim";
  std::string conf;
  int repeat = 5;
  app.add_option("--shared", shared_dir, "the shared folder holding traces/")
      ->capture_default_str();
  app.add_option("--device", device_spec, "npumem's device spec")->capture_default_str();
  app.add_option("--conf", conf, "npumem settings 'key:value,...' (default: caching)");
  app.add_option("--repeat", repeat, "runs per heap and trace; the fastest counts")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  npumem::cli::ReplayOptions options;
  options.device_spec = device_spec;
  options.config = npumem::parse_config(conf);
  std::printf("%-20s %8s %10s %10s %10s %9s %12s %12s\n", "trace", "events", "npumem", "malloc",
              "mimalloc", "overhead", "peak req", "peak resv");
  std::printf("%-20s %8s %10s %10s %10s %9s\n", "", "", "ns/event", "ns/event", "ns/event",
              "ratio");
  for (const auto& file : npumem::bench::trace_files(shared_dir + "/traces")) {
    npumem::bench::print_row(file, options, repeat);
  }
  return 0;
}
