// Rounding helpers shared by the core.
#pragma once

#include <cstddef>

namespace npumem::core {

constexpr std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace npumem::core
