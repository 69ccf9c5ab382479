#include "npumem/leak_detector.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "npumem/errors.h"
#include "observe/watch/backtrace.h"

namespace npumem {
namespace {

constexpr std::size_t kMaxFrames = 64;
// Frames of the detector itself above the allocator's notify: on_event, group_of.
constexpr std::size_t kDetectorFrames = 2;

std::uint64_t as_bytes(std::int64_t value) {
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

double growth_between(std::uint64_t baseline, std::uint64_t final_bytes) {
  if (baseline == 0) return final_bytes == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (static_cast<double>(final_bytes) - static_cast<double>(baseline)) /
         static_cast<double>(baseline);
}

// What a recurring group leaks over the judged iterations: their survivors, the last
// judged iteration's at most the group's usual amount (the lower median of the
// iterations that left some). The last one's may be a tensor carried into the
// iteration in progress (a scratch buffer alive across the optimizer step), which is no
// leak and, untagged, falls in the same group as the real one: counted whole, a 4 MiB
// scratch buffer read as a 4 MiB leak beside 512 bytes kept per step. The others count
// whole: capped each at the median, a cache's 256 KiB every third step beside a loss's
// 512 bytes every step read as 9 KiB, and passed a threshold the cache alone passed.
std::uint64_t recurring_bytes(const std::vector<std::uint64_t>& bytes_made,
                              std::size_t first_judged, std::size_t last_judged) {
  std::vector<std::uint64_t> left;
  std::uint64_t total = 0;
  for (std::size_t iteration = first_judged; iteration <= last_judged; ++iteration) {
    if (bytes_made[iteration] == 0) continue;
    left.push_back(bytes_made[iteration]);
    if (iteration != last_judged) total += bytes_made[iteration];
  }
  if (left.empty()) return 0;
  const auto median = left.begin() + static_cast<std::ptrdiff_t>((left.size() - 1) / 2);
  std::nth_element(left.begin(), median, left.end());
  return total + std::min(bytes_made[last_judged], *median);
}

// Survivors of `bytes_made`'s judged iterations, first_judged..last_judged, spread over
// them: three iterations at least, the first in the first third, the last in the last.
bool spread_over(const std::vector<std::uint64_t>& bytes_made, std::size_t first_judged,
                 std::size_t last_judged) {
  std::size_t count = 0;
  std::size_t first = 0;
  std::size_t last = 0;
  for (std::size_t iteration = first_judged; iteration <= last_judged; ++iteration) {
    if (bytes_made[iteration] == 0) continue;
    if (count++ == 0) first = iteration;
    last = iteration;
  }
  const std::size_t third = (last_judged - first_judged + 1) / 3;
  return count >= 3 && first < first_judged + third && last > last_judged - third;
}

}  // namespace

LeakDetector::LeakDetector(LeakOptions options) : options_(options) {
  if (!(options_.threshold >= 0.0)) {
    throw ConfigError("leak threshold must be a fraction of at least 0, got " +
                      std::to_string(options_.threshold));
  }
  if (options_.max_frames > kMaxFrames) {
    throw ConfigError("leak max_frames must be at most " + std::to_string(kMaxFrames) + ", got " +
                      std::to_string(options_.max_frames));
  }
}

std::shared_ptr<LeakDetector> LeakDetector::attach(Allocator& allocator, LeakOptions options) {
  auto detector = std::make_shared<LeakDetector>(options);
  allocator.add_observer(detector);
  detector->mark_baseline(allocator);
  return detector;
}

void LeakDetector::on_event(const Event& event) {
  std::lock_guard lock(mutex_);
  if (event.kind == EventKind::alloc) {
    allocated_bytes_ += event.bytes;
    live_[event.address] = {event.bytes, event.requested_bytes, iteration_, group_of(event)};
  } else if (event.kind == EventKind::free) {
    allocated_bytes_ -= std::min(allocated_bytes_, event.bytes);
    const auto found = live_.find(event.address);
    if (found == live_.end()) return;
    // Alive at the last boundary: the report judges that state, so what a script frees
    // on its way out (its globals) still counts.
    if (found->second.iteration < iteration_) {
      freed_since_boundary_.push_back(
          {found->second, options_.site_of ? options_.site_of(event.address) : std::string()});
    }
    live_.erase(found);
  } else if (event.kind == EventKind::iteration) {
    tick_locked();
  }
}

[[gnu::noinline]] std::uint32_t LeakDetector::group_of(const Event& event) {
  // Without backtraces, runs of allocations share a tag and pool: no key to build.
  if (!options_.backtraces && !groups_.empty()) {
    const auto& [tag, pool, frames] = *groups_[last_group_];
    if (tag == event.tag && pool == event.pool) return last_group_;
  }
  std::array<const void*, kMaxFrames> frames{};
  std::size_t count = 0;
  if (options_.backtraces) {
    count = observe::capture_backtrace(frames.data(), options_.max_frames, kDetectorFrames);
  }
  GroupKey key{std::string(event.tag), std::string(event.pool),
               std::vector<const void*>(frames.begin(), frames.begin() + count)};
  const auto [found, inserted] =
      group_ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(groups_.size()));
  if (inserted) groups_.push_back(&found->first);
  last_group_ = found->second;
  return last_group_;
}

void LeakDetector::mark_baseline(const Allocator& allocator) {
  const Stats stats = allocator.stats_leaving_caches();
  std::lock_guard lock(mutex_);
  baseline_bytes_ = as_bytes(stats.allocated_bytes.all.current);
  allocated_bytes_ = baseline_bytes_;
  iteration_ = 0;
  samples_.clear();
  live_.clear();
  freed_since_boundary_.clear();
}

void LeakDetector::tick() {
  std::lock_guard lock(mutex_);
  tick_locked();
}

void LeakDetector::tick_locked() {
  samples_.push_back(allocated_bytes_);
  ++iteration_;
  freed_since_boundary_.clear();
}

LeakReport LeakDetector::report() const {
  std::lock_guard lock(mutex_);
  LeakReport report;
  report.iterations = iteration_;
  report.warmup_iterations = options_.warmup_iterations;
  // Allocations carry the number of boundaries before them: 0 is before the first.
  // Judged: after warm-up, and complete (the last one, iteration_, is in progress).
  const std::size_t first_judged = options_.warmup_iterations + 1;
  const auto judged = [&](std::size_t iteration) {
    return iteration >= first_judged && iteration < iteration_;
  };
  report.judged_iterations = iteration_ > first_judged ? iteration_ - first_judged : 0;
  // samples_[k] is taken at the boundary that starts iteration k + 1.
  report.baseline_bytes = samples_.size() > options_.warmup_iterations
                              ? samples_[options_.warmup_iterations]
                              : baseline_bytes_;
  report.final_bytes = samples_.empty() ? allocated_bytes_ : samples_.back();
  report.growth = growth_between(report.baseline_bytes, report.final_bytes);
  report.threshold = options_.threshold;
  report.samples = samples_;
  // Survivors, each with its site (asked now, or as it was freed), and their groups: the
  // detector's, split by site.
  struct Survivor {
    const Allocation* allocation;
    std::string site;
  };
  std::vector<Survivor> survivors;
  survivors.reserve(live_.size() + freed_since_boundary_.size());
  for (const auto& [address, allocation] : live_) {
    survivors.push_back(
        {&allocation, options_.site_of ? options_.site_of(address) : std::string()});
  }
  for (const Freed& freed : freed_since_boundary_) {
    survivors.push_back({&freed.allocation, freed.site});
  }
  std::map<std::pair<std::uint32_t, std::string>, std::size_t> group_index;
  std::vector<std::size_t> survivor_group(survivors.size());
  for (std::size_t i = 0; i < survivors.size(); ++i) {
    const auto key = std::make_pair(survivors[i].allocation->group, survivors[i].site);
    survivor_group[i] = group_index.try_emplace(key, group_index.size()).first->second;
  }
  std::vector<LeakGroup> groups(group_index.size());
  // Per group, bytes of the survivors made in each iteration.
  std::vector<std::vector<std::uint64_t>> bytes_made(groups.size(),
                                                     std::vector<std::uint64_t>(iteration_ + 1, 0));
  std::vector<std::vector<bool>> seen(groups.size(), std::vector<bool>(iteration_ + 1, false));
  observe::FrameNames frame_names;
  for (std::size_t i = 0; i < survivors.size(); ++i) {
    const Allocation& allocation = *survivors[i].allocation;
    const std::size_t id = survivor_group[i];
    LeakGroup& group = groups[id];
    if (group.count == 0) {
      const auto& [tag, pool, frames] = *groups_[allocation.group];
      group.tag = tag;
      group.pool = pool;
      group.site = survivors[i].site;
      for (const void* frame : frames) group.frames.push_back(frame_names(frame));
      group.first_iteration = allocation.iteration;
    }
    ++group.count;
    group.bytes += allocation.bytes;
    group.requested_bytes += allocation.requested_bytes;
    group.first_iteration = std::min(group.first_iteration, allocation.iteration);
    group.last_iteration = std::max(group.last_iteration, allocation.iteration);
    bytes_made[id][allocation.iteration] += allocation.bytes;
    if (!seen[id][allocation.iteration]) {
      seen[id][allocation.iteration] = true;
      ++group.iterations;
      if (judged(allocation.iteration)) ++group.judged_iterations;
    }
    if (judged(allocation.iteration)) group.judged_bytes += allocation.bytes;
  }
  const std::size_t recurring_from = std::max<std::size_t>(2, (report.judged_iterations + 1) / 2);
  const bool any_judged = report.judged_iterations >= 2;  // else last_judged is none
  const std::size_t last_judged = any_judged ? iteration_ - 1 : 0;
  std::vector<bool> left_unrecurring(iteration_ + 1, false);
  for (std::size_t id = 0; id < groups.size(); ++id) {
    LeakGroup& group = groups[id];
    if (group.count == 0) continue;
    group.recurring = any_judged && (group.judged_iterations >= recurring_from ||
                                     spread_over(bytes_made[id], first_judged, last_judged));
    if (group.recurring) {
      report.leaked_bytes += recurring_bytes(bytes_made[id], first_judged, last_judged);
    } else if (any_judged) {
      for (std::size_t iteration = first_judged; iteration < last_judged; ++iteration) {
        if (bytes_made[id][iteration] == 0) continue;
        report.unrecurring_bytes += bytes_made[id][iteration];
        left_unrecurring[iteration] = true;
      }
    }
    report.survivors.push_back(std::move(group));
  }
  report.unrecurring_iterations =
      static_cast<std::size_t>(std::count(left_unrecurring.begin(), left_unrecurring.end(), true));
  report.leaking =
      report.leaked_bytes > 0 && static_cast<double>(report.leaked_bytes) >
                                     report.threshold * static_cast<double>(report.baseline_bytes);
  std::sort(report.survivors.begin(), report.survivors.end(),
            [](const LeakGroup& a, const LeakGroup& b) {
              return a.recurring != b.recurring ? a.recurring : a.bytes > b.bytes;
            });
  return report;
}

}  // namespace npumem
