// The planned strategy's planner: plan_memory under a short deadline of work done (the
// same plan however loaded the machine is). Real models' iterations reach the lower
// bound in the first heuristics, well inside it.
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

class MemoryArenaPlanner : public ArenaPlanner {
 public:
  explicit MemoryArenaPlanner(std::chrono::nanoseconds time_limit) : time_limit_(time_limit) {}

  ArenaLayout lay_out(std::span<const TensorLifetime> tensors,
                      std::uint64_t alignment) const override {
    MemoryPlanOptions options;
    options.alignment = alignment;
    options.time_limit = time_limit_;
    options.counts_work = true;
    MemoryPlan plan = plan_memory(tensors, options);
    return {std::move(plan.offsets), plan.arena_bytes, plan.lower_bound_bytes};
  }

 private:
  std::chrono::nanoseconds time_limit_;
};

}  // namespace

std::shared_ptr<const ArenaPlanner> memory_arena_planner(std::chrono::nanoseconds time_limit) {
  return std::make_shared<const MemoryArenaPlanner>(time_limit);
}

}  // namespace npumem::plan

namespace npumem {

std::shared_ptr<const ArenaPlanner> default_arena_planner() {
  // Stateless and immutable, so every allocator shares one.
  static const std::shared_ptr<const ArenaPlanner> planner =
      plan::memory_arena_planner(std::chrono::milliseconds(20));
  return planner;
}

}  // namespace npumem
