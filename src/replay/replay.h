// The replay engine: walks a parsed trace through an npumem::Allocator on a device
// and collects what a report needs. Shared by `npumem replay` and later commands
// that compare strategies or devices on the same trace.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "npumem/allocator.h"
#include "npumem/config.h"
#include "npumem/device.h"
#include "npumem/stats.h"
#include "trace.h"

namespace npumem::cli {

// Called every few thousand events with (events done, events in the trace).
using ReplayProgress = std::function<void(std::size_t done, std::size_t total)>;

// Callbacks around one replay for observers (npumem replay --record, --leak-check,
// --hold): with the allocator once it is made, at every `i` marker, and at the end
// (also after an OOM) before the allocator is destroyed.
struct ReplayHooks {
  std::function<void(Allocator&)> on_start;
  std::function<void(Allocator&)> on_iteration;
  std::function<void(Allocator&)> on_finish;
};

struct ReplayOptions {
  std::string device_spec = "sim";
  Config config;
  // Quotas of the pools the trace's `p` lines create (a pool not here gets the quota its
  // `p` line gives, else none). The static strategy sizes a pool's arena by its quota.
  std::map<std::string, std::uint64_t> pool_quotas;
  // Times every allocation on its own (adds clock reads to the timed loop).
  bool record_latencies = false;
  ReplayProgress progress;
  ReplayHooks hooks;
};

struct TierFigures {
  bool present = false;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
};

struct ReplayResult {
  std::string device_name;
  std::uint64_t hbm_granularity_bytes = 0;  // the device's: memory is mapped in multiples of it
  Strategy strategy = Strategy::caching;
  std::size_t events = 0;           // alloc and free events in the trace
  std::size_t events_replayed = 0;  // alloc and free events done before an OOM stopped it
  std::size_t allocations = 0;      // alloc events in the trace
  std::size_t iterations = 0;       // `i` markers passed
  // Peak live bytes, from the trace alone: of the events replayed when it stopped.
  std::uint64_t peak_requested_bytes = 0;
  Stats stats;           // the allocator's, at the end of the replay
  PlannedStats planned;  // the planned strategy's (zero otherwise)
  // Every pool with its stats, default first, then those the trace removed (`r` lines:
  // named "NAME (removed)", as they were then), then the others.
  std::vector<PoolInfo> pools;
  std::array<TierFigures, kTierCount> tiers;
  double ns_per_event = 0.0;  // wall time of the replay loop per event replayed
  std::vector<std::uint64_t> allocation_latencies_ns;  // when record_latencies
  // Where each iteration's latencies begin in allocation_latencies_ns (the k-th `i`).
  std::vector<std::size_t> iteration_latency_starts;
  std::optional<std::string> out_of_memory;  // the explanation, when it stopped
  // False: the allocator could not be made (a static arena the device refused), so no
  // event ran and every figure is 0.
  bool started = true;
  std::vector<std::string> warnings;  // the allocator's (Allocator::warnings), e.g. a fallback

  bool completed() const { return !out_of_memory.has_value(); }
  std::uint64_t peak_reserved_bytes() const;
  std::uint64_t peak_allocated_bytes() const;
  // Peak reserved over peak requested bytes; none when no byte was requested (a
  // trace of zero-byte allocations: any ratio would mislead).
  std::optional<double> overhead_ratio() const;
  // Planned strategy: why no plan served (the trace marks no iterations, or none
  // repeated a learned one); empty when one did, and under other strategies.
  std::string why_no_plan_served() const;
  // Planned strategy: the allocation latencies since a plan first served (empty when
  // none did or latencies were not recorded).
  std::vector<std::uint64_t> steady_latencies_ns() const;
};

struct LatencySummary {
  std::uint64_t p50_ns = 0;
  std::uint64_t p99_ns = 0;
  std::uint64_t max_ns = 0;
};

// Nearest-rank percentiles of allocation latencies (all zero when there are none).
LatencySummary summarize_latencies(std::vector<std::uint64_t> latencies_ns);

// Replays `trace` on a fresh allocator over make_device(options.device_spec).
// An OutOfMemory stops the replay and is recorded in the result, also one that
// refuses the allocator itself (a static arena the device cannot hold); a bad device
// spec or config throws ConfigError.
ReplayResult replay_trace(const Trace& trace, const ReplayOptions& options);

}  // namespace npumem::cli
