// Reading a JSON input (a snapshot's history: an array of objects) through
// parse_json_text, at 50,000 and 400,000 entries: the time per entry should not grow
// with the count (the parser's callback form, used to refuse a key given twice, made it
// quadratic: a 500,000-event snapshot took 52 s to read for `npumem viz`).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "json_text.h"

namespace npumem::bench {
namespace {

// A history-like document of `entries` objects.
std::string history_json(std::int64_t entries) {
  std::string text = "{\"history\": {\"entries\": [";
  for (std::int64_t i = 0; i < entries; ++i) {
    if (i != 0) text += ",";
    text += "{\"seq\": " + std::to_string(i) +
            ", \"kind\": \"alloc\", \"address\": " + std::to_string(4096 * i) +
            ", \"bytes\": 512, \"pool\": \"default\", \"tag\": \"\"}";
  }
  return text + "]}}";
}

void parse_history(benchmark::State& state) {
  const std::string text = history_json(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(cli::parse_json_text(text, "history.json"));
  }
  state.counters["ns_per_entry"] = benchmark::Counter(
      static_cast<double>(state.range(0)),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(parse_history)->Arg(50'000)->Arg(400'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace npumem::bench

BENCHMARK_MAIN();
