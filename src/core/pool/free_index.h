// Free-block index: two-level segregated fit (TLSF). Free blocks sit in buckets by
// size class (power-of-two ranges split 16 ways); two bitmap levels find the first
// non-empty bucket at or above a size in O(1). Inside a bucket a bounded scan picks
// the best fit, so every lookup is bounded time and wastes at most 1/16 of a class
// when the scan bound is hit.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "core/pool/block.h"

namespace npumem::core {

class FreeIndex {
 public:
  void insert(Block* block);
  void remove(Block* block);
  // A free block with min_size <= size <= max_size: the smallest among those scanned
  // (an exact fit ends the scan), the lower address on ties; nullptr when none is found.
  Block* find(std::size_t min_size, std::size_t max_size) const;
  bool empty() const { return first_level_map_ == 0; }
  std::size_t count() const { return count_; }
  // The largest free block (scans the top bucket); nullptr when empty.
  Block* largest() const;
  // The first free block of at least min_size that accept(block) takes, smaller
  // buckets first; visits only blocks of at least min_size's bucket.
  template <typename Accept>
  Block* find_first(std::size_t min_size, Accept&& accept) const {
    if (min_size == 0 || first_level_map_ == 0) return nullptr;
    for (unsigned b = bucket_of(min_size); b != kNoBucket; b = next_bucket_after(b)) {
      for (Block* block = heads_[b]; block != nullptr; block = block->free_next) {
        if (block->size >= min_size && accept(*block)) return block;
      }
    }
    return nullptr;
  }

 private:
  static constexpr unsigned kSecondLevelLog2 = 4;
  static constexpr unsigned kSecondLevelCount = 1u << kSecondLevelLog2;
  static constexpr unsigned kFirstLevelCount = 64;
  static constexpr unsigned kScanLimit = 16;

  // Inline: every insert, remove and find starts here.
  static unsigned bucket_of(std::size_t size) {
    const unsigned first = static_cast<unsigned>(std::bit_width(size)) - 1;
    if (first < kSecondLevelLog2) return first * kSecondLevelCount;
    const unsigned second =
        static_cast<unsigned>(size >> (first - kSecondLevelLog2)) & (kSecondLevelCount - 1);
    return first * kSecondLevelCount + second;
  }
  Block* best_in_bucket(unsigned bucket, std::size_t min_size, std::size_t max_size,
                        unsigned scan_limit) const;
  unsigned next_bucket_after(unsigned bucket) const;  // kNoBucket when none

  static constexpr unsigned kNoBucket = kFirstLevelCount * kSecondLevelCount;
  std::array<Block*, kFirstLevelCount * kSecondLevelCount> heads_{};
  std::array<std::uint32_t, kFirstLevelCount> second_level_maps_{};
  std::uint64_t first_level_map_ = 0;
  std::size_t count_ = 0;
};

}  // namespace npumem::core
