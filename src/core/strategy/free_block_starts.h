// Where the free block that each of a plan's requests is taken from begins, when the
// requests are made and freed in their order: BlockPool::take_at's hints for the
// first iteration a plan serves, before any hit has shown them (planned_source.h).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace npumem::core {

// A request at its planned place in one space (an arena's offsets, or addresses).
struct PlacedRequest {
  std::uint64_t begin = 0;
  std::uint64_t bytes = 0;
  std::uint32_t made = 0;              // event times: distinct, in order
  std::optional<std::uint32_t> freed;  // none: live past the events
};

inline constexpr std::uint64_t kNoFreeBlock = std::numeric_limits<std::uint64_t>::max();

// Per request, the start of the free block holding its range when it is made, the
// free blocks split and merged as BlockPool's are; kNoFreeBlock where none holds it.
// `free`: the space's free blocks at first, start -> end.
std::vector<std::uint64_t> free_block_starts(std::span<const PlacedRequest> requests,
                                             std::map<std::uint64_t, std::uint64_t> free);

}  // namespace npumem::core
