// Allocation latency of the planned strategy once its plan serves, beside the static
// strategy (its arena sized by `npumem replay --advise`) and caching over the same
// allocations, in one run: the figure issue 12 sets ("p99 allocation latency <= the
// static strategy's"). Each shared trace with two iterations or more is replayed with
// its last iteration repeated (--repeats times), so that the steady state holds
// thousands of allocations; the window timed is every allocation from the first
// iteration a plan served to the end, the same allocations under every strategy.
// Strategies take turns, --rounds times; each percentile is the median over rounds.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "npumem/config.h"
#include "replay.h"
#include "static_advisor.h"
#include "trace.h"

namespace npumem::bench {
namespace {

using cli::Trace;
using cli::TraceEvent;
using cli::TraceOp;

// `trace` with its last iteration (the events from its last `i` on) repeated `repeats`
// more times, on new slots. A free in the last iteration of a slot the iteration before
// made frees, in each repeat, the slot made at the same position of the repeat before,
// unless that slot is freed already (a last iteration that ends the run frees what it
// made too); one of a slot made earlier still is left out of the repeats (it is freed
// once). None when the trace has fewer than two iterations or its last two differ in
// allocations.
std::optional<Trace> with_last_iteration_repeated(const Trace& trace, int repeats) {
  std::vector<std::size_t> marks;
  for (std::size_t k = 0; k < trace.events.size(); ++k) {
    if (trace.events[k].op == TraceOp::iteration) marks.push_back(k);
  }
  if (marks.size() < 2) return std::nullopt;
  const auto slots_made = [&](std::size_t begin, std::size_t end) {
    std::vector<std::uint32_t> slots;
    for (std::size_t k = begin; k < end; ++k) {
      if (trace.events[k].op == TraceOp::alloc) slots.push_back(trace.events[k].index);
    }
    return slots;
  };
  const std::vector<std::uint32_t> before = slots_made(marks[marks.size() - 2], marks.back());
  const std::vector<std::uint32_t> last = slots_made(marks.back(), trace.events.size());
  if (before.size() != last.size() || last.empty()) return std::nullopt;
  std::unordered_map<std::uint32_t, std::size_t> position_before;
  for (std::size_t k = 0; k < before.size(); ++k) position_before[before[k]] = k;

  Trace repeated = trace;
  std::vector<bool> freed(trace.allocations, false);
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::free) freed[event.index] = true;
  }
  std::vector<std::uint32_t> made_before = last;
  for (int r = 0; r < repeats; ++r) {
    std::unordered_map<std::uint32_t, std::uint32_t> renamed;
    std::vector<std::uint32_t> made;
    for (std::size_t k = marks.back(); k < trace.events.size(); ++k) {
      TraceEvent event = trace.events[k];
      if (event.op == TraceOp::alloc) {
        const auto slot = static_cast<std::uint32_t>(repeated.allocations++);
        freed.push_back(false);
        renamed[event.index] = slot;
        made.push_back(slot);
        event.index = slot;
      } else if (event.op == TraceOp::free) {
        if (const auto it = renamed.find(event.index); it != renamed.end()) {
          event.index = it->second;
        } else if (const auto at = position_before.find(event.index);
                   at != position_before.end() && !freed[made_before[at->second]]) {
          event.index = made_before[at->second];
        } else {
          continue;
        }
        freed[event.index] = true;
        ++repeated.frees;
      } else if (event.op == TraceOp::iteration) {
        ++repeated.iterations;
      }
      repeated.events.push_back(event);
    }
    made_before = std::move(made);
  }
  return repeated;
}

struct Percentiles {
  std::uint64_t p50 = 0;
  std::uint64_t p99 = 0;
};

std::uint64_t median(std::vector<std::uint64_t> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// One strategy's replays: per round, the percentiles of the window's latencies.
struct Rounds {
  std::string name;
  cli::ReplayOptions options;
  std::vector<std::uint64_t> p50, p99;
  Percentiles median() const { return {bench::median(p50), bench::median(p99)}; }
};

void print_row(const std::filesystem::path& file, int repeats, int rounds) {
  const std::string name = file.stem().string();
  const std::optional<Trace> trace = with_last_iteration_repeated(cli::read_trace(file), repeats);
  if (!trace) {
    std::printf("%-20s (fewer than two iterations of one shape: no steady state)\n", name.c_str());
    return;
  }
  cli::ReplayOptions base;
  base.record_latencies = true;
  const cli::StaticAdvice advice = cli::advise_static_size(*trace, base, 0.05);
  std::vector<Rounds> strategies;
  for (const std::string& conf :
       {"strategy:static,static_size:" + std::to_string(advice.recommended_bytes),
        std::string("strategy:caching"), std::string("strategy:planned")}) {
    Rounds strategy{conf.substr(9, conf.find(',') - 9), base, {}, {}};
    strategy.options.config = parse_config(conf);
    strategies.push_back(std::move(strategy));
  }
  std::size_t window_start = 0;
  std::size_t window = 0;
  for (int round = 0; round < rounds; ++round) {
    // Planned first: its first served iteration sets the window for all three.
    for (auto it = strategies.rbegin(); it != strategies.rend(); ++it) {
      const cli::ReplayResult result = cli::replay_trace(*trace, it->options);
      if (!result.completed()) {
        std::printf("%-20s (%s stopped: out of memory)\n", name.c_str(), it->name.c_str());
        return;
      }
      if (it == strategies.rbegin()) {
        if (result.planned.first_served_iteration == 0) {
          std::printf("%-20s (no plan served: %s)\n", name.c_str(),
                      result.why_no_plan_served().c_str());
          return;
        }
        window_start = result.iteration_latency_starts[result.planned.first_served_iteration - 1];
      }
      std::vector<std::uint64_t> latencies(
          result.allocation_latencies_ns.begin() + static_cast<std::ptrdiff_t>(window_start),
          result.allocation_latencies_ns.end());
      window = latencies.size();
      const cli::LatencySummary summary = cli::summarize_latencies(std::move(latencies));
      it->p50.push_back(summary.p50_ns);
      it->p99.push_back(summary.p99_ns);
    }
  }
  const Percentiles fixed = strategies[0].median();
  const Percentiles caching = strategies[1].median();
  const Percentiles planned = strategies[2].median();
  std::printf(
      "%-20s %8zu %8llu %8llu   %8llu %8llu   %8llu %8llu   %9.2f\n", name.c_str(), window,
      static_cast<unsigned long long>(fixed.p50), static_cast<unsigned long long>(fixed.p99),
      static_cast<unsigned long long>(caching.p50), static_cast<unsigned long long>(caching.p99),
      static_cast<unsigned long long>(planned.p50), static_cast<unsigned long long>(planned.p99),
      static_cast<double>(planned.p99) /
          static_cast<double>(std::max<std::uint64_t>(fixed.p99, 1)));
}

}  // namespace
}  // namespace npumem::bench

int main(int argc, char** argv) {
  CLI::App app{"Allocation latency: planned (once a plan serves) beside static and caching"};
  std::string shared_dir = NPUMEM_SHARED_DIR;
  int repeats = 30;
  int rounds = 3;
  app.add_option("--shared", shared_dir, "the shared folder holding traces/")
      ->capture_default_str();
  app.add_option("--repeats", repeats, "times each trace's last iteration is repeated")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--rounds", rounds, "replays per strategy and trace; medians are printed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // A missing folder or a trace that does not parse: its message, exit 2.
  try {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(shared_dir + "/traces")) {
      if (entry.path().extension() == ".trace") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    std::printf("%-20s %8s %-19s   %-19s   %-19s   %9s\n", "", "", "static (advised)", "caching",
                "planned", "planned/");
    std::printf("%-20s %8s %8s %8s   %8s %8s   %8s %8s   %9s\n", "trace", "allocs", "p50 ns",
                "p99 ns", "p50 ns", "p99 ns", "p50 ns", "p99 ns", "static p99");
    for (const auto& file : files) npumem::bench::print_row(file, repeats, rounds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "latency_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
