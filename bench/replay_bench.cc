// Replays each shared trace through npumem (the replay engine, virtual NPU with
// backing none) and the same event sequence through malloc/free and mimalloc; prints
// ns per event for each and npumem's overhead ratio.
//
// A heap's speed depends on what the process did before: glibc's malloc replayed
// mobilenet_v2_infer at ~250 ns/event in a fresh process (~200 on repeats there, ~100
// with its mmap and trim thresholds raised), at 24-44 after bert_train_dynpad's replay
// in the same process. So each heap is timed in a child process of its own, forked
// once the trace is read, from the same start: "first" is its first replay there
// (npumem: a fresh allocator, so every segment is a device call), "again" the best of
// --repeat replays after it (npumem: the same allocator, holding what the first replay
// left cached).
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "npumem/allocator.h"
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

// The same loop shape as the replay engine: iteration marks reach a heap that takes them
// (npumem: the planned strategy learns from them); pool switches, tags and streams are
// skipped.
template <typename Heap>
double ns_per_event(const Trace& trace, Heap& heap) {
  std::vector<void*> pointers(trace.allocations, nullptr);
  const Clock::time_point start = Clock::now();
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::alloc) {
      pointers[event.index] = heap.allocate(event.bytes);
    } else if (event.op == TraceOp::free) {
      heap.deallocate(pointers[event.index]);
      pointers[event.index] = nullptr;
    } else if (event.op == TraceOp::iteration) {
      if constexpr (requires { heap.mark_iteration(std::nullopt); }) {
        heap.mark_iteration(event.index != 0 ? std::optional(event.bytes) : std::nullopt);
      }
    }
  }
  const auto elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  for (void* ptr : pointers) {
    if (ptr != nullptr) heap.deallocate(ptr);
  }
  return elapsed / static_cast<double>(trace.memory_events());
}

struct Timing {
  double first = 0;  // ns/event of the first replay in a fresh process
  double again = 0;  // the best of the replays after it
};

template <typename Heap>
Timing time_replays(const Trace& trace, Heap& heap, int repeat) {
  Timing timing{ns_per_event(trace, heap), std::numeric_limits<double>::infinity()};
  for (int i = 0; i < repeat; ++i) timing.again = std::min(timing.again, ns_per_event(trace, heap));
  return timing;
}

// Runs `measure` in a child process, so that no heap starts warm from what this process
// or another heap's replay left behind.
Timing in_child(const std::function<Timing()>& measure) {
  std::array<int, 2> pipe_fds{};
  if (pipe(pipe_fds.data()) != 0) throw std::runtime_error("replay_bench: pipe failed");
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("replay_bench: fork failed");
  if (child == 0) {
    close(pipe_fds[0]);
    const Timing timing = measure();
    const bool written = write(pipe_fds[1], &timing, sizeof timing) == sizeof timing;
    _exit(written ? 0 : 1);
  }
  close(pipe_fds[1]);
  Timing timing{};
  const bool read_all = read(pipe_fds[0], &timing, sizeof timing) == sizeof timing;
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!read_all || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("replay_bench: a measuring child process failed");
  }
  return timing;
}

struct NpumemHeap {
  Allocator allocator;
  void* allocate(std::size_t bytes) { return allocator.allocate(bytes); }
  void deallocate(void* ptr) { allocator.deallocate(ptr); }
  void mark_iteration(std::optional<std::uint64_t> key) { allocator.mark_iteration(key); }
};

// The heap make_heap() returns, timed in a child process of its own.
template <typename MakeHeap>
Timing time_heap(const Trace& trace, MakeHeap make_heap, int repeat) {
  return in_child([&] {
    auto heap = make_heap();
    return time_replays(trace, heap, repeat);
  });
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
  // The replay engine, for the memory figures; a replay that runs out of memory is not
  // timed. Its allocator is gone before the children fork.
  const cli::ReplayResult replay = cli::replay_trace(trace, options);
  if (!replay.completed()) {
    std::printf("%-20s %8zu (stopped: out of memory)\n", file.stem().string().c_str(),
                trace.memory_events());
    return;
  }
  const Timing npumem = time_heap(
      trace,
      [&] { return NpumemHeap{Allocator(make_device(options.device_spec), options.config)}; },
      repeat);
  const Timing malloc_ = time_heap(trace, system_heap, repeat);
  const Timing mimalloc = time_heap(trace, mimalloc_heap, repeat);
  std::printf("%-20s %8zu %8.1f %8.1f %8.1f   %8.1f %8.1f %8.1f %9.3f %12s %12s\n",
              file.stem().string().c_str(), trace.memory_events(), npumem.first, malloc_.first,
              mimalloc.first, npumem.again, malloc_.again, mimalloc.again,
              replay.overhead_ratio().value_or(0.0),
              format_bytes(replay.peak_requested_bytes).c_str(),
              format_bytes(replay.peak_reserved_bytes()).c_str());
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
  app.add_option("--repeat", repeat,
                 "replays after the first per heap and trace; the fastest counts")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // A bad setting, a missing folder or a trace that does not parse: its message, exit 2.
  try {
    npumem::cli::ReplayOptions options;
    options.device_spec = device_spec;
    options.config = npumem::parse_config(conf);
    const auto files = npumem::bench::trace_files(shared_dir + "/traces");
    std::printf("%-20s %8s %-28s %-28s %9s %12s %12s\n", "", "", "ns/event, first replay",
                "ns/event, again (best)", "overhead", "peak req", "peak resv");
    std::printf("%-20s %8s %8s %8s %8s   %8s %8s %8s %9s\n", "trace", "events", "npumem", "malloc",
                "mimalloc", "npumem", "malloc", "mimalloc", "ratio");
    for (const auto& file : files) npumem::bench::print_row(file, options, repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
