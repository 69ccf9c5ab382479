// Bisection for the smallest value that passes a monotone test (a capacity on which
// a trace completes, an arena that holds it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>

namespace npumem::cli {

// `known_fail` fails; the search doubles from `first_try` up to `limit`, then bisects.
// Returns the smallest passing value in (known_fail, limit], or nullopt when even
// `limit` fails.
inline std::optional<std::uint64_t> smallest_passing(
    std::uint64_t known_fail, std::uint64_t first_try, std::uint64_t limit,
    const std::function<bool(std::uint64_t)>& passes) {
  std::uint64_t fails = known_fail;
  std::uint64_t succeeds = std::min(std::max(first_try, known_fail + 1), limit);
  while (!passes(succeeds)) {
    if (succeeds >= limit) return std::nullopt;
    fails = succeeds;
    succeeds = std::min(succeeds * 2, limit);
  }
  while (succeeds - fails > 1) {
    const std::uint64_t middle = fails + (succeeds - fails) / 2;
    (passes(middle) ? succeeds : fails) = middle;
  }
  return succeeds;
}

}  // namespace npumem::cli
