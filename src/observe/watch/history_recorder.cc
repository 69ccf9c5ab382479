#include <algorithm>
#include <chrono>
#include <string>

#include "npumem/errors.h"
#include "npumem/history.h"
#include "observe/watch/backtrace.h"

namespace npumem {
namespace {

// Frames of the recorder itself above the allocator's notify: on_event.
constexpr std::size_t kRecorderFrames = 1;
constexpr std::size_t kMaxFrames = 64;
// A billion entries is tens of GiB: more cannot be meant.
constexpr std::size_t kMaxEntries = 1'000'000'000;

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t as_bytes(std::int64_t value) {
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

}  // namespace

HistoryRecorder::HistoryRecorder(HistoryOptions options, const Stats& baseline)
    : options_(options), start_unix_ns_(unix_ns()), start_steady_ns_(steady_ns()) {
  if (options_.max_entries == 0) throw ConfigError("history max_entries must be at least 1");
  if (options_.max_frames > kMaxFrames) {
    throw ConfigError("history max_frames must be at most " + std::to_string(kMaxFrames) +
                      ", got " + std::to_string(options_.max_frames));
  }
  if (options_.max_entries > kMaxEntries) {
    throw ConfigError("history max_entries must be at most " + std::to_string(kMaxEntries) +
                      ", got " + std::to_string(options_.max_entries));
  }
  names_.emplace_back();
  name_ids_.emplace("", 0);
  for (const Tier tier : kAllTiers) {
    const auto index = static_cast<std::size_t>(tier);
    allocated_[index] = as_bytes(baseline.allocated_bytes.by_tier[index].current);
    reserved_[index] = as_bytes(baseline.reserved_bytes.by_tier[index].current);
  }
}

void HistoryRecorder::on_event(const Event& event) {
  const auto now = static_cast<std::uint64_t>(steady_ns() - start_steady_ns_);
  std::lock_guard lock(mutex_);
  update_totals(event);
  const std::size_t index = recorded_ % options_.max_entries;
  // The ring grows as events come, so a generous max_entries costs nothing up front.
  if (index == slots_.size()) {
    slots_.emplace_back();
    if (options_.backtraces) frames_.resize(slots_.size() * options_.max_frames);
  }
  Slot& slot = slots_[index];
  const auto tier = static_cast<std::size_t>(event.tier);
  slot = {now,
          event.address,
          event.bytes,
          event.requested_bytes,
          allocated_[tier],
          reserved_[tier],
          intern_cached(event.pool, last_pool_),
          intern_cached(event.tag, last_tag_),
          event.kind,
          event.tier,
          0};
  if (options_.backtraces) {
    slot.frame_count = static_cast<std::uint16_t>(observe::capture_backtrace(
        frames_.data() + index * options_.max_frames, options_.max_frames, kRecorderFrames));
  }
  ++recorded_;
}

void HistoryRecorder::update_totals(const Event& event) {
  const auto tier = static_cast<std::size_t>(event.tier);
  switch (event.kind) {
    case EventKind::alloc:
      allocated_[tier] += event.bytes;
      break;
    case EventKind::free:
      allocated_[tier] -= std::min(allocated_[tier], event.bytes);
      break;
    // Physical memory held: segments (caching, static) or mapped granules (expandable).
    case EventKind::segment_alloc:
    case EventKind::map:
      reserved_[tier] += event.bytes;
      break;
    case EventKind::segment_free:
    case EventKind::unmap:
      reserved_[tier] -= std::min(reserved_[tier], event.bytes);
      break;
    case EventKind::spill:
    case EventKind::reclaim:
    case EventKind::oom:
    case EventKind::iteration:
      break;
  }
}

// Most events repeat the previous pool and tag: compare before searching.
std::uint32_t HistoryRecorder::intern_cached(std::string_view text, std::uint32_t& last) {
  if (names_[last] == text) return last;
  auto found = name_ids_.find(text);
  if (found == name_ids_.end()) {
    names_.emplace_back(text);
    found = name_ids_.emplace(names_.back(), static_cast<std::uint32_t>(names_.size() - 1)).first;
  }
  last = found->second;
  return last;
}

std::vector<HistoryEntry> HistoryRecorder::entries() const {
  std::lock_guard lock(mutex_);
  std::vector<HistoryEntry> entries;
  const std::uint64_t first = recorded_ - std::min<std::uint64_t>(recorded_, options_.max_entries);
  entries.reserve(static_cast<std::size_t>(recorded_ - first));
  for (std::uint64_t sequence = first; sequence < recorded_; ++sequence) {
    entries.push_back(expand(sequence));
  }
  return entries;
}

HistoryEntry HistoryRecorder::expand(std::uint64_t sequence) const {
  const std::size_t index = sequence % options_.max_entries;
  const Slot& slot = slots_[index];
  HistoryEntry entry{sequence,
                     slot.time_ns,
                     slot.kind,
                     slot.tier,
                     slot.address,
                     slot.bytes,
                     slot.requested_bytes,
                     names_[slot.pool],
                     names_[slot.tag],
                     slot.tier_allocated_bytes,
                     slot.tier_reserved_bytes,
                     {}};
  if (options_.backtraces) {
    const void* const* first = frames_.data() + index * options_.max_frames;
    entry.frames.assign(first, first + slot.frame_count);
  }
  return entry;
}

std::uint64_t HistoryRecorder::recorded() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

std::uint64_t HistoryRecorder::dropped() const {
  std::lock_guard lock(mutex_);
  return recorded_ - std::min<std::uint64_t>(recorded_, options_.max_entries);
}

std::shared_ptr<HistoryRecorder> record_history(Allocator& allocator, HistoryOptions options) {
  auto recorder = std::make_shared<HistoryRecorder>(options, allocator.stats_leaving_caches());
  allocator.add_observer(recorder);
  return recorder;
}

}  // namespace npumem
