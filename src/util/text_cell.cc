#include "npumem/text_cell.h"

#include <cstdint>

namespace npumem {
namespace {

// East Asian wide and fullwidth ranges (Unicode UAX #11), enough for CJK labels.
bool is_wide(std::uint32_t code) {
  return (code >= 0x1100 && code <= 0x115F) || (code >= 0x2E80 && code <= 0xA4CF) ||
         (code >= 0xAC00 && code <= 0xD7A3) || (code >= 0xF900 && code <= 0xFAFF) ||
         (code >= 0xFE30 && code <= 0xFE4F) || (code >= 0xFF00 && code <= 0xFF60) ||
         (code >= 0xFFE0 && code <= 0xFFE6) || (code >= 0x1F300 && code <= 0x1F64F) ||
         (code >= 0x20000 && code <= 0x3FFFD);
}

// Length of the UTF-8 sequence a lead byte starts (1 for stray bytes).
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

std::string padding(std::string_view text, std::size_t width) {
  const std::size_t used = display_width(text);
  return std::string(used < width ? width - used : 0, ' ');
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = sequence_length(lead);
    std::uint32_t code = length == 1 ? lead : lead & (0xFFu >> (length + 1));
    for (std::size_t k = 1; k < length && i + k < text.size(); ++k) {
      code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
    }
    width += is_wide(code) ? 2 : 1;
    i += length;
  }
  return width;
}

std::string pad_right(std::string_view text, std::size_t width) {
  return std::string(text) + padding(text, width);
}

std::string pad_left(std::string_view text, std::size_t width) {
  return padding(text, width) + std::string(text);
}

}  // namespace npumem
