// Dense random lifetime sets: the stress instance on which published greedy planners sit
// 7-8 % above the lower bound (../shared/records/random_dense_777.records is one).
#pragma once

#include <cstdint>
#include <vector>

#include "npumem/plan.h"

namespace npumem::plan {

struct RandomLifetimeSpec {
  std::uint64_t tensors = 2000;
  std::uint64_t ops = 400;
  std::uint64_t min_bytes = 256;  // sizes are log-uniform in [min, max]
  std::uint64_t max_bytes = 4 * 1024 * 1024;
  double mean_length = 25.0;  // lifetimes: first op uniform, then exponential, cut at the end
  std::uint64_t seed = 1;
};

// The same tensors for the same spec on every platform. Throws ConfigError on zero ops,
// min_bytes of 0 or above max_bytes, or a negative mean length.
std::vector<TensorLifetime> random_lifetimes(const RandomLifetimeSpec& spec);

}  // namespace npumem::plan
