// Uniform doubles from std::mt19937_64's raw bits: the same numbers on every platform for a
// given seed (std::uniform_real_distribution's algorithm is left to each library).
#pragma once

#include <random>

namespace npumem::plan {

// Uniform in [0, 1): the top 53 bits as a fraction.
inline double uniform01(std::mt19937_64& random) {
  return static_cast<double>(random() >> 11) * 0x1.0p-53;
}

}  // namespace npumem::plan
