#include "plan/memory/skyline_priorities.h"

#include <algorithm>
#include <cmath>

#include "plan/memory/uniform_random.h"
#include "plan/shard/range_max.h"

namespace npumem::plan {
namespace {

// Upper limits of the random weights: lengths and sizes matter on the same scale;
// pressure, whose logarithm spans a few tenths, needs a larger weight to matter.
constexpr double kMaxLengthWeight = 2.0;
constexpr double kMaxSizeWeight = 2.0;
constexpr double kMaxPressureWeight = 8.0;
constexpr double kMaxNoise = 0.3;        // relative
constexpr std::uint64_t kMaxMoved = 20;  // tensors moved by one hill-climbing step
constexpr double kMaxStep = 1.0;         // in log priority
constexpr double kMaxBoost = 3.0;        // in log priority

}  // namespace

PriorityFeatures priority_features(const PlanInstance& instance,
                                   std::span<const std::uint64_t> live) {
  PriorityFeatures features;
  if (instance.tensors.empty()) return features;
  const RangeMax range_max(live);
  const double peak = static_cast<double>(*std::max_element(live.begin(), live.end()));
  for (const PlanTensor& tensor : instance.tensors) {
    features.log_length.push_back(std::log(static_cast<double>(tensor.length)));
    features.log_size.push_back(std::log(static_cast<double>(tensor.size)));
    const double pressure = static_cast<double>(range_max.max(tensor.first, tensor.last)) / peak;
    features.log_pressure.push_back(std::log(pressure));
  }
  return features;
}

std::vector<double> weighted_priorities(const PriorityFeatures& features,
                                        const PriorityWeights& weights) {
  std::vector<double> priorities(features.log_size.size());
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    priorities[i] = weights.length * features.log_length[i] + weights.size * features.log_size[i] +
                    weights.pressure * features.log_pressure[i];
  }
  return priorities;
}

std::vector<double> random_priorities(const PriorityFeatures& features, std::mt19937_64& random) {
  PriorityWeights weights;
  weights.length = kMaxLengthWeight * uniform01(random);
  weights.size = kMaxSizeWeight * uniform01(random);
  weights.pressure = kMaxPressureWeight * uniform01(random);
  const double noise = kMaxNoise * uniform01(random);
  std::vector<double> priorities = weighted_priorities(features, weights);
  add_priority_noise(priorities, noise, random);
  return priorities;
}

void add_priority_noise(std::vector<double>& priorities, double max_noise,
                        std::mt19937_64& random) {
  for (double& priority : priorities) priority += std::log1p(max_noise * uniform01(random));
}

void perturb_priorities(std::vector<double>& priorities, std::mt19937_64& random) {
  if (priorities.empty()) return;
  const std::uint64_t moved = 1 + random() % kMaxMoved;
  for (std::uint64_t i = 0; i < moved; ++i) {
    double& priority = priorities[random() % priorities.size()];
    priority += kMaxStep * (2 * uniform01(random) - 1);
  }
}

void boost_priorities(std::vector<double>& priorities, std::span<const std::uint32_t> candidates,
                      std::mt19937_64& random) {
  if (candidates.empty()) return;
  const std::uint64_t boosted =
      1 + random() % std::min<std::uint64_t>(candidates.size(), kMaxMoved);
  for (std::uint64_t i = 0; i < boosted; ++i) {
    priorities[candidates[random() % candidates.size()]] += kMaxBoost * uniform01(random);
  }
}

}  // namespace npumem::plan
