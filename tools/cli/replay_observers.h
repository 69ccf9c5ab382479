// What `npumem replay` watches besides its report: the history it records
// (--record, --chrome-trace), the leak check over the trace's iterations
// (--leak-check), the size patterns of its requests (--patterns), and the stats page that `npumem
// smi` reads, held open after the replay on request (--hold).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "npumem/history.h"
#include "npumem/hooks.h"
#include "npumem/leak_detector.h"
#include "npumem/stats_page.h"
#include "replay.h"
#include "trace.h"

namespace npumem::cli {

struct ReplayObserverOptions {
  std::string record_path;        // snapshot JSON with history; empty: none
  std::string chrome_trace_path;  // Chrome Trace Event file; empty: none
  std::size_t history_entries = 1'000'000;
  bool leak_check = false;
  bool patterns = false;
  double leak_threshold = 0.0;
  double hold_seconds = 0.0;
};

// Adds --record, --chrome-trace, --history-entries, --leak-check, --leak-threshold,
// --patterns and --hold to the replay command.
void add_replay_observer_options(CLI::App& command, ReplayObserverOptions& options);

class ReplayObservers {
 public:
  // Throws Error when --leak-check is asked of a trace with fewer than two `i` lines.
  ReplayObservers(ReplayObserverOptions options, const Trace& trace);

  // The hooks that drive the observers during one replay.
  ReplayHooks hooks();
  // The leak check's verdict, once the replay has run with --leak-check.
  const std::optional<LeakReport>& leak_report() const { return leak_report_; }
  // The size patterns of the requests, once the replay has run with --patterns.
  const std::optional<SizePatterns>& size_patterns() const { return size_patterns_; }
  // With --hold, once the report is out: keeps the process (and its last figures on the
  // stats page) alive that long, or until Ctrl-C.
  void hold() const;

 private:
  void start(Allocator& allocator);
  void iteration(Allocator& allocator);
  void finish(Allocator& allocator);
  void write_files(const Allocator& allocator) const;

  const ReplayObserverOptions options_;
  const std::size_t trace_iterations_;
  std::size_t iterations_seen_ = 0;
  std::unique_ptr<StatsPublisher> publisher_;
  StatsPublisher::Registration registration_;
  std::shared_ptr<HistoryRecorder> recorder_;
  std::shared_ptr<LeakDetector> leaks_;
  std::optional<LeakReport> leak_report_;
  std::shared_ptr<Hooks> hooks_;
  SizePatternAnalyser analyser_;
  std::optional<SizePatterns> size_patterns_;
};

}  // namespace npumem::cli
