// Maximum over any index range in O(1) after an O(n log n) build (a sparse table).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace npumem::plan {

class RangeMax {
 public:
  explicit RangeMax(std::span<const std::uint64_t> values) {
    levels_.emplace_back(values.begin(), values.end());
    for (std::size_t width = 2; width <= values.size(); width *= 2) {
      const std::vector<std::uint64_t>& below = levels_.back();
      std::vector<std::uint64_t> level(values.size() - width + 1);
      for (std::size_t i = 0; i < level.size(); ++i) {
        level[i] = std::max(below[i], below[i + width / 2]);
      }
      levels_.push_back(std::move(level));
    }
  }

  // The maximum of values[first..last], inclusive; first <= last < size.
  std::uint64_t max(std::size_t first, std::size_t last) const {
    const std::size_t level = std::bit_width(last - first + 1) - 1;
    const std::size_t width = std::size_t{1} << level;
    return std::max(levels_[level][first], levels_[level][last + 1 - width]);
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // levels_[k][i] = max of [i, i + 2^k)
};

}  // namespace npumem::plan
