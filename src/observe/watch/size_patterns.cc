#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include "npumem/hooks.h"
#include "npumem/units.h"

namespace npumem {
namespace {

// Requests of the current iteration that the previous one also made, as a share.
double shared_share(const std::map<std::uint64_t, std::uint64_t>& current,
                    const std::map<std::uint64_t, std::uint64_t>& previous) {
  std::uint64_t total = 0;
  std::uint64_t shared = 0;
  for (const auto& [size, count] : current) {
    total += count;
    const auto found = previous.find(size);
    if (found != previous.end()) shared += std::min(count, found->second);
  }
  return total == 0 ? 1.0 : static_cast<double>(shared) / static_cast<double>(total);
}

}  // namespace

Hooks::Id SizePatternAnalyser::install(Hooks& hooks) {
  return hooks.on_alloc([this](const Event& event) { record(event.requested_bytes); });
}

void SizePatternAnalyser::record(std::uint64_t requested_bytes) {
  std::lock_guard lock(mutex_);
  ++totals_[requested_bytes];
  ++current_[requested_bytes];
  ++allocations_;
}

void SizePatternAnalyser::tick() {
  std::lock_guard lock(mutex_);
  if (current_.empty()) return;  // no requests: nothing repeated, nothing to repeat
  if (has_previous_) repetition_.push_back(shared_share(current_, previous_));
  previous_ = std::move(current_);
  current_.clear();
  has_previous_ = true;
}

SizePatterns SizePatternAnalyser::patterns(std::size_t top) const {
  std::lock_guard lock(mutex_);
  SizePatterns patterns;
  patterns.allocations = allocations_;
  patterns.distinct_sizes = totals_.size();
  patterns.repetition = repetition_;
  std::map<std::uint64_t, std::uint64_t> buckets;
  for (const auto& [size, count] : totals_)
    buckets[std::bit_ceil(std::max<std::uint64_t>(size, 1))] += count;
  patterns.histogram.assign(buckets.begin(), buckets.end());
  patterns.most_frequent.assign(totals_.begin(), totals_.end());
  std::stable_sort(patterns.most_frequent.begin(), patterns.most_frequent.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (patterns.most_frequent.size() > top) patterns.most_frequent.resize(top);
  return patterns;
}

std::string to_string(const SizePatterns& patterns) {
  std::ostringstream out;
  out << patterns.allocations << " allocations, " << patterns.distinct_sizes
      << " distinct sizes\nsizes (up to):\n";
  for (const auto& [bound, count] : patterns.histogram) {
    out << "  " << format_bytes(bound) << ": " << count << "\n";
  }
  out << "most frequent sizes:\n";
  for (const auto& [size, count] : patterns.most_frequent) {
    out << "  " << format_bytes(size) << " (" << size << " B): " << count << "\n";
  }
  if (!patterns.repetition.empty()) {
    out << "repetition of the previous iteration:";
    for (const double share : patterns.repetition) {
      char text[16];
      std::snprintf(text, sizeof text, " %.0f%%", share * 100.0);
      out << text;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace npumem
