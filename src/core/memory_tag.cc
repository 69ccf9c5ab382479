#include "core/memory_tag.h"

#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "npumem/observer.h"

namespace npumem {

namespace {

// Tags are few and long-lived (layer names, phases): interned for the process life.
struct TagTable {
  std::mutex mutex;
  std::deque<std::string> texts{""};
  std::map<std::string, std::uint32_t, std::less<>> ids{{"", 0}};

  std::uint32_t intern(std::string_view text) {
    std::lock_guard lock(mutex);
    if (auto found = ids.find(text); found != ids.end()) return found->second;
    const auto id = static_cast<std::uint32_t>(texts.size());
    texts.emplace_back(text);
    ids.emplace(texts.back(), id);
    return id;
  }
  std::string_view text(std::uint32_t id) {
    std::lock_guard lock(mutex);
    return id < texts.size() ? std::string_view(texts[id]) : std::string_view{};
  }
};

TagTable& tag_table() {
  static TagTable table;
  return table;
}

}  // namespace

void set_memory_tag(std::string_view tag) {
  core::detail::current_tag = tag_table().intern(tag);
}

std::string_view memory_tag() {
  return tag_table().text(core::detail::current_tag);
}

ScopedMemoryTag::ScopedMemoryTag(std::string_view tag) : previous_(memory_tag()) {
  set_memory_tag(tag);
}

ScopedMemoryTag::~ScopedMemoryTag() {
  set_memory_tag(previous_);
}

namespace core {
std::string_view tag_text(std::uint32_t id) {
  return tag_table().text(id);
}
}  // namespace core

}  // namespace npumem
