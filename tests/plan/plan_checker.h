// An independent checker for static memory plans, written from the definition (pairwise,
// quadratic) rather than from the planner's data structures.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "npumem/plan.h"
#include "plan/memory/plan_instance.h"

namespace npumem::plan::testing {

inline std::uint64_t round_up(std::uint64_t bytes, std::uint64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

inline bool lifetimes_meet(const TensorLifetime& a, const TensorLifetime& b) {
  return a.first_op <= b.last_op && b.first_op <= a.last_op;
}

// "" when the plan is valid: one offset per tensor, every offset aligned, every tensor
// inside the arena, the arena no larger than needed, and no two tensors with overlapping
// lifetimes overlapping in memory. Otherwise the first problem found.
inline std::string plan_problem(std::span<const TensorLifetime> tensors, const MemoryPlan& plan,
                                std::uint64_t alignment) {
  if (plan.offsets.size() != tensors.size()) return "offset count differs from tensor count";
  std::uint64_t highest_end = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t size = round_up(tensors[i].bytes, alignment);
    if (plan.offsets[i] % alignment != 0) return "tensor " + std::to_string(i) + " is unaligned";
    if (plan.offsets[i] > plan.arena_bytes || size > plan.arena_bytes - plan.offsets[i]) {
      return "tensor " + std::to_string(i) + " ends past the arena";
    }
    if (size > 0) highest_end = std::max(highest_end, plan.offsets[i] + size);
  }
  if (highest_end != plan.arena_bytes) return "arena is not the highest tensor end";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t size_i = round_up(tensors[i].bytes, alignment);
    for (std::size_t j = i + 1; j < tensors.size(); ++j) {
      if (!lifetimes_meet(tensors[i], tensors[j])) continue;
      const std::uint64_t size_j = round_up(tensors[j].bytes, alignment);
      if (size_i == 0 || size_j == 0) continue;
      const bool apart = plan.offsets[i] + size_i <= plan.offsets[j] ||
                         plan.offsets[j] + size_j <= plan.offsets[i];
      if (!apart) {
        return "tensors " + std::to_string(i) + " and " + std::to_string(j) +
               " are live together and overlap in memory";
      }
    }
  }
  return "";
}

// plan_problem for offsets an algorithm gave the instance made from `tensors`.
inline std::string instance_plan_problem(std::span<const TensorLifetime> tensors,
                                         const PlanInstance& instance,
                                         std::span<const std::uint64_t> offsets,
                                         std::uint64_t arena, std::uint64_t alignment) {
  MemoryPlan plan;
  plan.offsets = offsets_in_input_order(instance, offsets, tensors.size());
  plan.arena_bytes = arena;
  return plan_problem(tensors, plan, alignment);
}

// The lower bound from its definition: the most aligned bytes live at any op. The peak is
// reached where some tensor starts, so only those ops are tried.
inline std::uint64_t brute_force_lower_bound(std::span<const TensorLifetime> tensors,
                                             std::uint64_t alignment) {
  std::uint64_t best = 0;
  for (const TensorLifetime& at : tensors) {
    std::uint64_t live = 0;
    for (const TensorLifetime& tensor : tensors) {
      if (tensor.first_op <= at.first_op && at.first_op <= tensor.last_op) {
        live += round_up(tensor.bytes, alignment);
      }
    }
    best = std::max(best, live);
  }
  return best;
}

// Random tensors: sizes in [1, max_bytes], lifetimes within [0, ops).
inline std::vector<TensorLifetime> random_tensors(std::size_t count, std::uint64_t ops,
                                                  std::uint64_t max_bytes, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<TensorLifetime> tensors(count);
  for (TensorLifetime& tensor : tensors) {
    tensor.bytes = 1 + random() % max_bytes;
    tensor.first_op = random() % ops;
    tensor.last_op = tensor.first_op + random() % (ops - tensor.first_op);
  }
  return tensors;
}

}  // namespace npumem::plan::testing
