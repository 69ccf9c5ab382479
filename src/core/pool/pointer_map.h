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
  // Its slots at first (rounded up to a power of two); it doubles as it fills.
  explicit PointerMap(std::size_t initial_slots = 1024);
  void insert(std::uintptr_t address, Block* block);
  [[gnu::always_inline]] Block* find(std::uintptr_t address) const {
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
  // Addresses are granule aligned (64 bytes at least), so the low 6 bits carry nothing.
  // A table that fits the caches spreads every block on its own (Fibonacci hashing,
  // one multiply). From kRunsFromSlots on, a random probe is a cache miss (10^6 live
  // blocks fill 32 MiB of slots), so the blocks of one 8 KiB stretch share a run of 16
  // slots (four cache lines), one per 512-byte step: neighbours, which programs
  // allocate and free close together, then cost one miss between them, not one each.
  // A second multiply over the folded product places the runs, so aligned segments and
  // fixed strides spread like random keys; the key keeps the 64-byte steps, so finer
  // granules do not pile onto one slot.
  static constexpr std::size_t kRunsFromSlots = std::size_t{1} << 16;
  static constexpr unsigned kStepShift = 9;
  static constexpr unsigned kRunShift = 4;  // log2 of the slots per run
  static constexpr std::uint64_t kFibonacci = 0x9E3779B97F4A7C15ull;
  // Inline: every free looks its pointer up here.
  std::size_t home(std::uintptr_t address) const {
    if (run_mask_ == 0) return static_cast<std::size_t>(((address >> 6) * kFibonacci) >> shift_);
    std::uint64_t hash = ((address >> 6) & key_mask_) * kFibonacci;
    hash = (hash ^ (hash >> 32)) * kFibonacci;
    const auto run = static_cast<std::size_t>(hash >> shift_);
    return (run & ~run_mask_) | ((address >> kStepShift) & run_mask_);
  }
  // The index of `address`, or of the empty slot where it would go.
  [[gnu::always_inline]] std::size_t find_slot(std::uintptr_t address) const {
    std::size_t i = home(address);
    while (slots_[i].address != 0 && slots_[i].address != address) i = (i + 1) & mask_;
    return i;
  }
  void grow();

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 0;  // 64 - log2(slot count): keeps the hash's high bits
  // With runs: the key leaves out the 512-byte steps inside a stretch; slots per run - 1.
  std::uint64_t key_mask_ = ~std::uint64_t{0};
  std::size_t run_mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace npumem::core
