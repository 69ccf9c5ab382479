#include "replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "npumem/allocator.h"
#include "npumem/errors.h"
#include "npumem/planned_report.h"

namespace npumem::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Progress callbacks come this often; a power of two keeps the check cheap.
constexpr std::size_t kProgressInterval = 4096;

std::uint64_t elapsed_ns(Clock::time_point start, Clock::time_point end) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
}

// One replay: the allocator, the live pointers by slot and the pool routing.
class ReplayRun {
 public:
  ReplayRun(const Trace& trace, const ReplayOptions& options)
      : trace_(trace),
        options_(options),
        allocator_(make_device(options.device_spec), options.config),
        pointers_(trace.allocations, nullptr),
        pool_ready_(trace.pools.size(), false) {
    for (const PoolInfo& pool : allocator_.pools()) mark_existing_pool(pool.name);
    if (options.record_latencies) result_.allocation_latencies_ns.reserve(trace.allocations);
  }

  ReplayResult run() {
    if (options_.hooks.on_start) options_.hooks.on_start(allocator_);
    const Clock::time_point start = Clock::now();
    replay_events();
    const std::uint64_t loop_ns = elapsed_ns(start, Clock::now());
    if (result_.events_replayed > 0) {
      result_.ns_per_event =
          static_cast<double>(loop_ns) / static_cast<double>(result_.events_replayed);
    }
    collect_figures();
    if (options_.hooks.on_finish) options_.hooks.on_finish(allocator_);
    return std::move(result_);
  }

 private:
  void mark_existing_pool(const std::string& name) {
    for (std::size_t i = 0; i < trace_.pools.size(); ++i) {
      if (trace_.pools[i] == name) pool_ready_[i] = true;
    }
  }

  void replay_events() {
    const std::size_t total = trace_.memory_events();
    std::size_t done = 0;
    for (const TraceEvent& event : trace_.events) {
      try {
        done += apply(event);
      } catch (const OutOfMemory& e) {
        result_.out_of_memory = e.what();
        break;
      }
      if (options_.progress && done % kProgressInterval == 0) options_.progress(done, total);
    }
    result_.events_replayed = done;
    if (options_.progress) options_.progress(done, total);
  }

  // Returns the number of memory events (alloc or free) applied.
  std::size_t apply(const TraceEvent& event) {
    switch (event.op) {
      case TraceOp::alloc:
        allocate(event);
        return 1;
      case TraceOp::free:
        allocator_.deallocate(pointers_[event.index]);
        pointers_[event.index] = nullptr;
        return 1;
      case TraceOp::pool:
        switch_pool(event.index, event.bytes, static_cast<std::size_t>(&event - &trace_.events[0]));
        return 0;
      case TraceOp::pool_removal:
        remove_pool(event.index);
        return 0;
      case TraceOp::iteration:
        ++result_.iterations;
        if (options_.record_latencies) {
          result_.iteration_latency_starts.push_back(result_.allocation_latencies_ns.size());
        }
        allocator_.mark_iteration(event.index != 0 ? std::optional(event.bytes) : std::nullopt);
        if (options_.hooks.on_iteration) options_.hooks.on_iteration(allocator_);
        return 0;
      case TraceOp::tag:
        set_memory_tag(trace_.tags[event.index]);
        return 0;
      case TraceOp::stream:
        stream_ = event.bytes;
        return 0;
    }
    return 0;
  }

  void allocate(const TraceEvent& event) {
    if (!options_.record_latencies) {
      pointers_[event.index] = allocator_.allocate(event.bytes, stream_);
      return;
    }
    const Clock::time_point start = Clock::now();
    pointers_[event.index] = allocator_.allocate(event.bytes, stream_);
    result_.allocation_latencies_ns.push_back(elapsed_ns(start, Clock::now()));
  }

  // Creates the pool on first use (again after a removal) with the options' quota, else
  // the trace's `trace_quota` (of event `event_index`: a quota the allocator refuses is
  // the trace's error, at its line), then routes this thread's allocations to it.
  void switch_pool(std::uint32_t pool_index, std::uint64_t trace_quota, std::size_t event_index) {
    const std::string& name = trace_.pools[pool_index];
    if (!pool_ready_[pool_index]) {
      const auto quota = options_.pool_quotas.find(name);
      const auto line = trace_.quota_lines.find(event_index);
      try {
        allocator_.create_pool(name,
                               quota == options_.pool_quotas.end() ? trace_quota : quota->second);
      } catch (const ConfigError& e) {
        if (quota != options_.pool_quotas.end() || line == trace_.quota_lines.end()) throw;
        throw ParseError(trace_.source, line->second, e.what());
      }
      pool_ready_[pool_index] = true;
    }
    pool_scope_.reset();
    pool_scope_.emplace(allocator_, name);
    scoped_pool_ = pool_index;
  }

  // Its figures stay in the report, under "NAME (removed)" (a second removal: "(removed 2)").
  void remove_pool(std::uint32_t pool_index) {
    const std::string& name = trace_.pools[pool_index];
    if (scoped_pool_ == pool_index) {
      pool_scope_.reset();
      scoped_pool_.reset();
    }
    for (PoolInfo& pool : allocator_.pools()) {
      if (pool.name != name) continue;
      const std::size_t before = std::count_if(
          removed_pools_.begin(), removed_pools_.end(),
          [&](const PoolInfo& removed) { return removed.name.starts_with(name + " (removed"); });
      pool.name += before == 0 ? " (removed)" : " (removed " + std::to_string(before + 1) + ")";
      removed_pools_.push_back(std::move(pool));
    }
    allocator_.remove_pool(name);
    pool_ready_[pool_index] = false;
  }

  void collect_figures() {
    result_.device_name = allocator_.device().name();
    result_.hbm_granularity_bytes = allocator_.device().tier_info(Tier::hbm).granularity_bytes;
    result_.strategy = allocator_.config().strategy;
    result_.warnings = allocator_.warnings();
    result_.events = trace_.memory_events();
    result_.allocations = trace_.allocations;
    result_.peak_requested_bytes = peak_live_bytes(trace_, result_.events_replayed);
    result_.stats = allocator_.stats();
    result_.planned = allocator_.planned_stats();
    result_.pools = allocator_.pools();
    result_.pools.insert(result_.pools.begin() + 1, removed_pools_.begin(), removed_pools_.end());
    for (const Tier tier : kAllTiers) {
      const TierInfo info = allocator_.device().tier_info(tier);
      const auto index = static_cast<std::size_t>(tier);
      result_.tiers[index] = {
          .present = info.present,
          .capacity_bytes = info.capacity_bytes,
          .peak_reserved_bytes =
              static_cast<std::uint64_t>(result_.stats.reserved_bytes.by_tier[index].peak),
          .peak_allocated_bytes =
              static_cast<std::uint64_t>(result_.stats.allocated_bytes.by_tier[index].peak),
      };
    }
  }

  const Trace& trace_;
  const ReplayOptions& options_;
  Allocator allocator_;
  std::vector<void*> pointers_;
  std::vector<bool> pool_ready_;
  std::optional<PoolScope> pool_scope_;       // declared after allocator_: ends before it
  std::optional<std::uint32_t> scoped_pool_;  // the trace's pool pool_scope_ routes to
  std::vector<PoolInfo> removed_pools_;       // as they were when removed
  StreamId stream_ = 0;                       // set by `s` lines
  ScopedMemoryTag caller_tag_{memory_tag()};  // restores it after the trace's `t` lines
  ReplayResult result_;
};

// The result of a replay whose allocator could not be made (a static arena the device
// refused): nothing replayed, the trace's counts and the device's tiers, the reason.
ReplayResult refused_at_start(const Trace& trace, const ReplayOptions& options,
                              const std::string& reason) {
  ReplayResult result;
  const std::shared_ptr<Device> device = make_device(options.device_spec);
  result.device_name = device->name();
  result.hbm_granularity_bytes = device->tier_info(Tier::hbm).granularity_bytes;
  result.strategy = options.config.strategy;
  result.events = trace.memory_events();
  result.allocations = trace.allocations;
  result.started = false;
  for (const Tier tier : kAllTiers) {
    const TierInfo info = device->tier_info(tier);
    result.tiers[static_cast<std::size_t>(tier)] = {.present = info.present,
                                                    .capacity_bytes = info.capacity_bytes};
  }
  result.out_of_memory = reason;
  return result;
}

}  // namespace

std::uint64_t ReplayResult::peak_reserved_bytes() const {
  return static_cast<std::uint64_t>(stats.reserved_bytes.all.peak);
}

std::uint64_t ReplayResult::peak_allocated_bytes() const {
  return static_cast<std::uint64_t>(stats.allocated_bytes.all.peak);
}

std::optional<double> ReplayResult::overhead_ratio() const {
  if (peak_requested_bytes == 0) return std::nullopt;
  return static_cast<double>(peak_reserved_bytes()) / static_cast<double>(peak_requested_bytes);
}

std::string ReplayResult::why_no_plan_served() const {
  if (strategy != Strategy::planned) return {};
  return npumem::why_no_plan_served(planned, "`i` lines");
}

std::vector<std::uint64_t> ReplayResult::steady_latencies_ns() const {
  const std::uint64_t first = planned.first_served_iteration;
  if (first == 0 || first > iteration_latency_starts.size()) return {};
  const auto start = static_cast<std::ptrdiff_t>(iteration_latency_starts[first - 1]);
  return {allocation_latencies_ns.begin() + start, allocation_latencies_ns.end()};
}

LatencySummary summarize_latencies(std::vector<std::uint64_t> latencies_ns) {
  if (latencies_ns.empty()) return {};
  std::sort(latencies_ns.begin(), latencies_ns.end());
  const auto rank = [&](double quantile) {
    const auto index =
        static_cast<std::size_t>(std::ceil(quantile * static_cast<double>(latencies_ns.size())));
    return latencies_ns[std::max<std::size_t>(index, 1) - 1];
  };
  return {.p50_ns = rank(0.50), .p99_ns = rank(0.99), .max_ns = latencies_ns.back()};
}

ReplayResult replay_trace(const Trace& trace, const ReplayOptions& options) {
  std::optional<ReplayRun> run;
  try {
    run.emplace(trace, options);
  } catch (const OutOfMemory& e) {
    return refused_at_start(trace, options, e.what());
  }
  return run->run();
}

}  // namespace npumem::cli
