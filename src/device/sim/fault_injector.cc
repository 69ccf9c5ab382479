#include "fault_injector.h"

namespace npumem {

FaultInjector::FaultInjector(FaultSpec spec) : spec_(spec), random_state_(spec.seed) {}

bool FaultInjector::should_fail(FaultOp op) {
  if (!spec_.enabled() || !spec_.applies_to(op)) return false;
  ++eligible_calls_;
  const bool every_nth = spec_.every != 0 && eligible_calls_ % spec_.every == 0;
  const bool by_chance = spec_.probability > 0.0 && next_uniform() < spec_.probability;
  return every_nth || by_chance;
}

// splitmix64: a fixed, portable sequence for a seed (std distributions are not).
double FaultInjector::next_uniform() {
  random_state_ += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = random_state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;
  return static_cast<double>(z >> 11) * kTwoToMinus53;
}

}  // namespace npumem
