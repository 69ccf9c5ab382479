#include "plan/memory/random_lifetimes.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "npumem/errors.h"
#include "plan/memory/uniform_random.h"

namespace npumem::plan {
namespace {

void check(const RandomLifetimeSpec& spec) {
  if (spec.ops == 0) throw ConfigError("random lifetimes need at least one op");
  if (spec.min_bytes == 0 || spec.min_bytes > spec.max_bytes) {
    throw ConfigError("random lifetimes need 0 < min_bytes <= max_bytes");
  }
  if (!(spec.mean_length >= 0)) throw ConfigError("random lifetimes need a mean length >= 0");
}

}  // namespace

std::vector<TensorLifetime> random_lifetimes(const RandomLifetimeSpec& spec) {
  check(spec);
  std::mt19937_64 random(spec.seed);
  const double log_min = std::log(static_cast<double>(spec.min_bytes));
  const double log_max = std::log(static_cast<double>(spec.max_bytes));
  std::vector<TensorLifetime> tensors(spec.tensors);
  for (TensorLifetime& tensor : tensors) {
    const double bytes = std::exp(log_min + (log_max - log_min) * uniform01(random));
    tensor.bytes = std::clamp(static_cast<std::uint64_t>(bytes), spec.min_bytes, spec.max_bytes);
    tensor.first_op = random() % spec.ops;
    // Exponential by inversion; 1 - u lies in (0, 1], so the logarithm is finite.
    const double length = -spec.mean_length * std::log(1.0 - uniform01(random));
    const double room = static_cast<double>(spec.ops - 1 - tensor.first_op);
    tensor.last_op = tensor.first_op + static_cast<std::uint64_t>(std::min(length, room));
  }
  return tensors;
}

}  // namespace npumem::plan
