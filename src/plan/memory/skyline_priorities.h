// Priorities for skyline packing: per tensor, a weighted sum of the logarithms of its
// lifetime length, its size, and its pressure (the most bytes live at any op of its
// lifetime, over the lower bound: tensors in the tightest spots rank high).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "plan/memory/plan_instance.h"

namespace npumem::plan {

struct PriorityFeatures {
  std::vector<double> log_length;
  std::vector<double> log_size;
  std::vector<double> log_pressure;
};

struct PriorityWeights {
  double length = 0;
  double size = 0;
  double pressure = 0;
};

// live: bytes live at each renumbered op (live_bytes_per_op).
PriorityFeatures priority_features(const PlanInstance& instance,
                                   std::span<const std::uint64_t> live);

std::vector<double> weighted_priorities(const PriorityFeatures& features,
                                        const PriorityWeights& weights);

// Random weights plus a little random noise per tensor: a restart of the search.
std::vector<double> random_priorities(const PriorityFeatures& features, std::mt19937_64& random);

// Raises every priority by a random log1p(u * max_noise), u uniform in [0, 1): ties and
// near-ties break another way.
void add_priority_noise(std::vector<double>& priorities, double max_noise, std::mt19937_64& random);

// Moves a few random tensors' priorities up or down: a hill-climbing step.
void perturb_priorities(std::vector<double>& priorities, std::mt19937_64& random);

// Raises the priorities of a few of `candidates` (tensors a plan left near its top, so
// that the next run places them lower): a squeaky-wheel step (Joslin & Clements 1999).
void boost_priorities(std::vector<double>& priorities, std::span<const std::uint32_t> candidates,
                      std::mt19937_64& random);

}  // namespace npumem::plan
