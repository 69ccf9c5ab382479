#include "observe/page/stats_page_layout.h"

#include <algorithm>

namespace npumem::observe {

void store_text(PageText& text, std::string_view value) {
  const std::size_t length = std::min(value.size(), kPageTextBytes - 1);
  for (std::size_t i = 0; i < kPageTextBytes; ++i) {
    text.chars[i].store(i < length ? value[i] : '\0', std::memory_order_relaxed);
  }
}

std::string load_text(const PageText& text) {
  std::string value;
  for (const auto& c : text.chars) {
    const char loaded = c.load(std::memory_order_relaxed);
    if (loaded == '\0') break;
    value += loaded;
  }
  return value;
}

}  // namespace npumem::observe
