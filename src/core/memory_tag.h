// Interned memory tags: blocks carry a small id, the table maps it to the text.
#pragma once

#include <cstdint>
#include <string_view>

namespace npumem::core {

namespace detail {
inline constinit thread_local std::uint32_t current_tag = 0;
}  // namespace detail

// The calling thread's current tag as an id (0 when no tag is set); read on every
// allocation, so inline.
inline std::uint32_t current_tag_id() {
  return detail::current_tag;
}
// The text of an id; stays valid for the life of the process.
std::string_view tag_text(std::uint32_t id);

}  // namespace npumem::core
