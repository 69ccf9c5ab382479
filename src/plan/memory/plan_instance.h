// A memory-planning instance in the form the placement algorithms work on: only tensors
// with bytes, sizes rounded up to the alignment, op indices renumbered densely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "npumem/plan.h"

namespace npumem::plan {

inline constexpr std::uint64_t kNoFit = std::numeric_limits<std::uint64_t>::max();

// a + b, or kNoFit when the sum reaches 2^64-1: arenas stay below that, so kNoFit means
// "no arena".
inline std::uint64_t add_or_no_fit(std::uint64_t a, std::uint64_t b) {
  return a > kNoFit - b ? kNoFit : a + b;
}

struct PlanTensor {
  std::uint64_t size = 0;  // aligned, > 0
  // Renumbered ops: the lifetime endpoints of all tensors, sorted, as 0, 1, 2, ...; two
  // lifetimes overlap exactly when they did before.
  std::uint32_t first = 0;
  std::uint32_t last = 0;
  std::uint64_t length = 0;  // ops in the original lifetime: last_op - first_op + 1
};

struct PlanInstance {
  std::vector<PlanTensor> tensors;
  std::vector<std::size_t> input_index;  // tensors[i] came from input tensor input_index[i]
  std::uint32_t op_count = 0;            // renumbered ops run 0 .. op_count-1
};

inline bool lifetimes_overlap(const PlanTensor& a, const PlanTensor& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Throws ConfigError when alignment is not a power of two, Error when an aligned size
// exceeds 2^64-1.
PlanInstance make_plan_instance(std::span<const TensorLifetime> tensors, std::uint64_t alignment);

// Aligned bytes live at each renumbered op. Throws Error when they reach 2^64-1.
std::vector<std::uint64_t> live_bytes_per_op(const PlanInstance& instance);

// Sum of the aligned sizes, saturating at 2^64-1.
std::uint64_t total_bytes(const PlanInstance& instance);

// Scatters offsets of the instance's tensors back to input order (zero-byte tensors: 0).
std::vector<std::uint64_t> offsets_in_input_order(const PlanInstance& instance,
                                                  std::span<const std::uint64_t> offsets,
                                                  std::size_t input_count);

}  // namespace npumem::plan
