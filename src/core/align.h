// Rounding helpers shared by the core.
#pragma once

#include <cstddef>

namespace npumem::core {

constexpr std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// round_up for a power-of-two multiple: a mask, not a division, on the hot path.
constexpr std::size_t round_up_pow2(std::size_t value, std::size_t power_of_two) {
  return (value + power_of_two - 1) & ~(power_of_two - 1);
}

}  // namespace npumem::core
