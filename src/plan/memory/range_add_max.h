// Values over 0..n-1 with two operations in O(log n): add to every value of a range, and
// the maximum of a range. A bottom-up segment tree whose inner nodes keep the additions
// made to their whole subtree (pushed down along a query's borders). Sums saturate at
// kNoFit.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "plan/memory/plan_instance.h"

namespace npumem::plan {

class RangeAddMax {
 public:
  void assign(std::span<const std::uint64_t> values) {
    leaves_ = std::bit_ceil(std::max<std::size_t>(values.size(), 1));
    height_ = static_cast<unsigned>(std::bit_width(leaves_));
    max_.assign(2 * leaves_, 0);
    pending_.assign(leaves_, 0);
    std::copy(values.begin(), values.end(), max_.begin() + static_cast<std::ptrdiff_t>(leaves_));
    for (std::size_t node = leaves_ - 1; node >= 1; --node) {
      max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
    }
  }

  // Adds `amount` to values first..last (inclusive, last < n).
  void add(std::size_t first, std::size_t last, std::uint64_t amount) {
    std::size_t low = first + leaves_;
    std::size_t high = last + leaves_ + 1;
    for (std::size_t left = low, right = high; left < right; left /= 2, right /= 2) {
      if (left % 2 == 1) apply(left++, amount);
      if (right % 2 == 1) apply(--right, amount);
    }
    rebuild_above(low);
    rebuild_above(high - 1);
  }

  // The maximum of values first..last (inclusive, last < n).
  std::uint64_t max(std::size_t first, std::size_t last) {
    std::size_t left = first + leaves_;
    std::size_t right = last + leaves_ + 1;
    push_down_to(left);
    push_down_to(right - 1);
    std::uint64_t highest = 0;
    for (; left < right; left /= 2, right /= 2) {
      if (left % 2 == 1) highest = std::max(highest, max_[left++]);
      if (right % 2 == 1) highest = std::max(highest, max_[--right]);
    }
    return highest;
  }

 private:
  void apply(std::size_t node, std::uint64_t amount) {
    max_[node] = add_or_no_fit(max_[node], amount);
    if (node < leaves_) pending_[node] = add_or_no_fit(pending_[node], amount);
  }

  void rebuild_above(std::size_t node) {
    for (node /= 2; node >= 1; node /= 2) {
      max_[node] = add_or_no_fit(std::max(max_[2 * node], max_[2 * node + 1]), pending_[node]);
    }
  }

  void push_down_to(std::size_t leaf) {
    for (unsigned level = height_ - 1; level > 0; --level) {
      const std::size_t node = leaf >> level;
      if (pending_[node] == 0) continue;
      apply(2 * node, pending_[node]);
      apply(2 * node + 1, pending_[node]);
      pending_[node] = 0;
    }
  }

  std::size_t leaves_ = 1;
  unsigned height_ = 1;                 // levels from a leaf to the root, both counted
  std::vector<std::uint64_t> max_;      // of the subtree, its pending additions included
  std::vector<std::uint64_t> pending_;  // inner nodes: added to the whole subtree, not yet below
};

}  // namespace npumem::plan
