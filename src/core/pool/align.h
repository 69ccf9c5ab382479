// Rounding helpers shared by the core. Sizes come from users (requests, config,
// device specs), so the arithmetic is checked: an overflow is an error, never a
// wrapped size or a division by zero.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace npumem::core {

// `value` rounded up to a multiple of `multiple`; throws std::overflow_error when the
// result does not fit in size_t, std::invalid_argument when `multiple` is 0.
inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  if (multiple == 0) throw std::invalid_argument("round_up: multiple is 0");
  std::size_t padded = 0;
  if (__builtin_add_overflow(value, multiple - 1, &padded)) {
    throw std::overflow_error("size " + std::to_string(value) + " rounded up to a multiple of " +
                              std::to_string(multiple) + " does not fit in 64 bits");
  }
  return padded / multiple * multiple;
}

// round_up for a power-of-two multiple: a mask, not a division, on the hot path.
constexpr std::size_t round_up_pow2(std::size_t value, std::size_t power_of_two) {
  return (value + power_of_two - 1) & ~(power_of_two - 1);
}

}  // namespace npumem::core
