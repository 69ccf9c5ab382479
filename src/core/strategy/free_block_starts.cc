#include "core/strategy/free_block_starts.h"

#include <algorithm>

namespace npumem::core {
namespace {

struct Event {
  std::uint32_t time;
  std::size_t index;
  bool made;
};

}  // namespace

std::vector<std::uint64_t> free_block_starts(std::span<const PlacedRequest> requests,
                                             std::map<std::uint64_t, std::uint64_t> free) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    events.push_back({requests[i].made, i, true});
    if (requests[i].freed) events.push_back({*requests[i].freed, i, false});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.time < b.time; });
  std::vector<std::uint64_t> starts(requests.size(), kNoFreeBlock);
  for (const Event& e : events) {
    const std::uint64_t begin = requests[e.index].begin;
    const std::uint64_t end = begin + requests[e.index].bytes;
    if (e.made) {
      auto block = free.upper_bound(begin);
      if (block == free.begin() || std::prev(block)->second < end) continue;
      --block;
      const auto [start, stop] = *block;
      starts[e.index] = start;
      free.erase(block);
      if (start < begin) free.emplace(start, begin);
      if (end < stop) free.emplace(end, stop);
    } else if (starts[e.index] != kNoFreeBlock) {  // freed what it took
      std::uint64_t start = begin;
      std::uint64_t stop = end;
      if (const auto after = free.find(end); after != free.end()) {
        stop = after->second;
        free.erase(after);
      }
      if (const auto next = free.lower_bound(begin);
          next != free.begin() && std::prev(next)->second == begin) {
        start = std::prev(next)->first;
        free.erase(std::prev(next));
      }
      free.emplace(start, stop);
    }
  }
  return starts;
}

}  // namespace npumem::core
