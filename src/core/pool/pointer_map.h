// Live pointer -> block lookup: open addressing with linear probing and
// backward-shift deletion. Device memory has no room for headers (and backing
// "none" has no pages at all), so the allocator keeps this side table instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pool/block.h"

namespace npumem::core {

class PointerMap {
 public:
  PointerMap();
  void insert(std::uintptr_t address, Block* block);
  Block* find(std::uintptr_t address) const {
    if (address == 0) return nullptr;
    return slots_[find_slot(address)].block;
  }
  // Removes and returns the block, or nullptr when the address is not present.
  Block* erase(std::uintptr_t address);
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    std::uintptr_t address = 0;  // 0: empty (no block starts at address 0)
    Block* block = nullptr;
  };
  // Blocks of one 8 KiB stretch of addresses share a run of 16 slots (four cache
  // lines), one slot per 512-byte step: neighbouring blocks, which programs allocate
  // and free close together in time, then cost one cache miss between them instead of
  // one each (10^6 live blocks fill 32 MiB of slots, past the caches). The run is
  // placed by a mixing hash of the stretch, so address patterns (aligned segments,
  // fixed strides) spread like random keys; the 64-byte steps inside a 512-byte step
  // are hashed too, so finer granules do not pile onto one slot.
  static constexpr unsigned kStretchShift = 13;
  static constexpr unsigned kStepShift = 9;
  static constexpr std::size_t kSlotsPerStretch = std::size_t{1} << (kStretchShift - kStepShift);
  // Inline: every free looks its pointer up here.
  std::size_t home(std::uintptr_t address) const {
    std::uint64_t key = ((address >> kStretchShift) << 3) | ((address >> 6) & 7);
    key ^= key >> 32;
    key *= 0x9E3779B97F4A7C15ull;
    key ^= key >> 29;
    const auto run = static_cast<std::size_t>((key * 0xBF58476D1CE4E5B9ull) >> shift_);
    return (run & ~(kSlotsPerStretch - 1)) | ((address >> kStepShift) & (kSlotsPerStretch - 1));
  }
  // The index of `address`, or of the empty slot where it would go.
  std::size_t find_slot(std::uintptr_t address) const {
    std::size_t i = home(address);
    while (slots_[i].address != 0 && slots_[i].address != address) i = (i + 1) & mask_;
    return i;
  }
  void grow();

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 0;  // 64 - log2(slot count): keeps the hash's high bits
  std::size_t size_ = 0;
};

}  // namespace npumem::core
