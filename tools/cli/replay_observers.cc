#include "replay_observers.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "commands.h"
#include "npumem/errors.h"
#include "npumem/snapshot.h"

namespace npumem::cli {
namespace {

constexpr std::chrono::milliseconds kHoldTick{20};

volatile std::sig_atomic_t hold_interrupted = 0;

void interrupt_hold(int) {
  hold_interrupted = 1;
}

// Writes through `write` into `path`; throws Error naming the file when it fails.
template <typename Write>
void write_file(const std::string& path, const char* what, Write write) {
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw Error("cannot write " + std::string(what) + " " + path + ": " + std::strerror(errno));
  write(out);
  out.close();
  if (!out) throw Error("cannot write " + std::string(what) + " " + path + ": write failed");
}

}  // namespace

void add_replay_observer_options(CLI::App& command, ReplayObserverOptions& options) {
  CLI::Option* record =
      command
          .add_option("--record", options.record_path,
                      "write a memory snapshot with the recorded history (JSON; see `npumem viz`)")
          ->check(output_path_check());
  CLI::Option* chrome_trace =
      command
          .add_option("--chrome-trace", options.chrome_trace_path,
                      "write the history as a Chrome Trace Event file (Perfetto, chrome://tracing)")
          ->check(output_path_check());
  // Options that only shape another's output: alone they were accepted and did nothing.
  command
      .add_option("--history-entries", options.history_entries,
                  "events the history keeps (the oldest are dropped; with --record or "
                  "--chrome-trace)")
      ->capture_default_str()
      ->check(whole_number_check())
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000'000}))
      ->each([record, chrome_trace](const std::string&) {
        if (record->count() == 0 && chrome_trace->count() == 0) {
          throw CLI::ValidationError(
              "sizes the history --record and --chrome-trace write; give one of them");
        }
      });
  CLI::Option* leak_check =
      command.add_flag("--leak-check", options.leak_check,
                       "at the last `i` line, name allocations made after warm-up (the first "
                       "iteration) that stay alive iteration after iteration; exit 4 on a leak");
  command
      .add_option("--leak-threshold", options.leak_threshold,
                  "recurring survivors above this fraction of the steady-state allocated "
                  "bytes are a leak (0: any; with --leak-check)")
      ->capture_default_str()
      ->check(nonnegative_check())
      ->needs(leak_check);
  command.add_flag("--patterns", options.patterns,
                   "report the requested sizes: histogram, most frequent sizes, and how much "
                   "each iteration repeats the one before");
  command
      .add_option("--hold", options.hold_seconds,
                  "keep the finished replay alive this many seconds (visible to `npumem smi`)")
      ->check(nonnegative_check());
}

ReplayObservers::ReplayObservers(ReplayObserverOptions options, const Trace& trace)
    : options_(std::move(options)), trace_iterations_(trace.iterations) {
  // Fail before a long replay rather than after it.
  check_outputs_apart(
      {{"the trace", trace.source}},
      {{"--record", options_.record_path}, {"--chrome-trace", options_.chrome_trace_path}});
  for (const std::string& path : {options_.record_path, options_.chrome_trace_path}) {
    if (!path.empty()) check_writable(path, "output");
  }
  if (options_.leak_check && trace_iterations_ < 2) {
    throw Error("--leak-check needs iteration markers: " + trace.source + " has " +
                std::to_string(trace_iterations_) + " `i` line" +
                (trace_iterations_ == 1 ? "" : "s") +
                ", and the check needs at least two (a baseline and an end)");
  }
}

ReplayHooks ReplayObservers::hooks() {
  return {[this](Allocator& allocator) { start(allocator); },
          [this](Allocator& allocator) { iteration(allocator); },
          [this](Allocator& allocator) { finish(allocator); }};
}

void ReplayObservers::start(Allocator& allocator) {
  if (!stats_publishing_disabled()) {
    try {
      publisher_ = std::make_unique<StatsPublisher>();
      registration_ = publisher_->publish(allocator);
    } catch (const Error& e) {
      std::cerr << "npumem: not publishing stats for `npumem smi` (" << kStatsPageVariable
                << "=0 silences this): " << e.what() << "\n";
    }
  }
  if (!options_.record_path.empty() || !options_.chrome_trace_path.empty()) {
    recorder_ = record_history(allocator, {.max_entries = options_.history_entries});
  }
  // What comes before the first `i` is setup; the detector counts the `i` lines itself
  // (the allocator's iteration events) and judges the steady state after warm-up.
  if (options_.leak_check) {
    leaks_ = LeakDetector::attach(allocator, {.threshold = options_.leak_threshold});
  }
  if (options_.patterns) {
    hooks_ = std::make_shared<Hooks>();
    analyser_.install(*hooks_);
    allocator.add_observer(hooks_);
  }
}

// The last `i` ends the check: what follows it is the iteration in progress.
void ReplayObservers::iteration(Allocator& /*allocator*/) {
  // Each `i` ends the iteration before it (the analyser leaves out those that allocated
  // nothing, as what precedes the first `i` often is).
  if (options_.patterns) analyser_.tick();
  if (!options_.leak_check) return;
  ++iterations_seen_;
  if (iterations_seen_ == trace_iterations_) leak_report_ = leaks_->report();
}

void ReplayObservers::finish(Allocator& allocator) {
  if (leaks_ && !leak_report_) leak_report_ = leaks_->report();  // stopped early (OOM)
  if (hooks_) {
    allocator.remove_observer(hooks_);
    analyser_.tick();  // the last iteration ends with the trace
    size_patterns_ = analyser_.patterns();
  }
  write_files(allocator);
  // The allocator ends with the replay; its figures stay for `npumem smi` while the
  // report is printed and held (hold()), which used to come before the report.
  registration_.freeze();
}

void ReplayObservers::write_files(const Allocator& allocator) const {
  if (!recorder_) return;
  const MemorySnapshot snapshot = memory_snapshot(allocator, recorder_.get());
  if (!options_.record_path.empty()) {
    write_file(options_.record_path, "snapshot",
               [&](std::ostream& out) { write_snapshot_json(snapshot, out); });
    std::cerr << "npumem: snapshot with " << snapshot.history.entries.size()
              << " history events written to " << options_.record_path << "\n";
  }
  if (!options_.chrome_trace_path.empty()) {
    write_file(options_.chrome_trace_path, "Chrome trace",
               [&](std::ostream& out) { write_chrome_trace(snapshot, out); });
    std::cerr << "npumem: Chrome trace written to " << options_.chrome_trace_path << "\n";
  }
}

// Ctrl-C or SIGTERM ends the hold early and the replay normally (its page removed).
void ReplayObservers::hold() const {
  if (options_.hold_seconds <= 0.0) return;
  std::cerr << "npumem: replay done; holding for " << options_.hold_seconds << " s (pid "
            << ::getpid()
            << (publisher_ ? ", see `npumem smi`"
                           : std::string(", off `npumem smi`: ") + kStatsPageVariable + " is off")
            << "; Ctrl-C ends it)\n";
  hold_interrupted = 0;
  const auto previous_int = std::signal(SIGINT, interrupt_hold);
  const auto previous_term = std::signal(SIGTERM, interrupt_hold);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.hold_seconds);
  while (hold_interrupted == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kHoldTick);
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
}

}  // namespace npumem::cli
