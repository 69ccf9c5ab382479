// Table cells for reports whose labels may be CJK (the seeds label snapshots in
// Chinese): padding by display columns, not bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace npumem {

// Terminal columns of UTF-8 text: wide (East Asian) characters count two.
std::size_t display_width(std::string_view text);
// `text` padded with spaces to `width` columns (unchanged when already wider).
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

}  // namespace npumem
