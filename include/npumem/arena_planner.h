// How the planned strategy lays out a learned iteration: the core calls this
// interface, the plan layer implements it (plan_memory), and the Allocator's
// constructor receives it. The core never includes the plan layer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace npumem {

// One tensor: `bytes` live from op `first_op` through op `last_op` (inclusive).
struct TensorLifetime {
  std::uint64_t bytes = 0;
  std::uint64_t first_op = 0;
  std::uint64_t last_op = 0;
};

struct ArenaLayout {
  std::vector<std::uint64_t> offsets;  // one per tensor, in input order
  std::uint64_t arena_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;  // max over ops of the aligned bytes live there
};

class ArenaPlanner {
 public:
  virtual ~ArenaPlanner() = default;
  // Offsets (multiples of `alignment`) such that tensors whose lifetimes overlap never
  // overlap in memory. Called under the allocator's lock at an iteration boundary, so
  // it must return quickly.
  virtual ArenaLayout lay_out(std::span<const TensorLifetime> tensors,
                              std::uint64_t alignment) const = 0;
};

// The planner an Allocator gets unless given another: the plan layer's search
// (plan::plan_memory) with a deadline of a few milliseconds. Defined in src/plan.
std::shared_ptr<const ArenaPlanner> default_arena_planner();

}  // namespace npumem
