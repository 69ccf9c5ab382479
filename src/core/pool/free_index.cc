#include "core/pool/free_index.h"

#include <bit>

namespace npumem::core {

void FreeIndex::insert(Block* block) {
  const unsigned bucket = bucket_of(block->size);
  Block*& head = heads_[bucket];
  block->free_prev = nullptr;
  block->free_next = head;
  if (head != nullptr) head->free_prev = block;
  head = block;
  second_level_maps_[bucket / kSecondLevelCount] |= 1u << (bucket % kSecondLevelCount);
  first_level_map_ |= std::uint64_t{1} << (bucket / kSecondLevelCount);
  ++count_;
}

void FreeIndex::remove(Block* block) {
  const unsigned bucket = bucket_of(block->size);
  if (block->free_prev != nullptr) {
    block->free_prev->free_next = block->free_next;
  } else {
    heads_[bucket] = block->free_next;
  }
  if (block->free_next != nullptr) block->free_next->free_prev = block->free_prev;
  block->free_prev = block->free_next = nullptr;
  if (heads_[bucket] == nullptr) {
    const unsigned first = bucket / kSecondLevelCount;
    second_level_maps_[first] &= ~(1u << (bucket % kSecondLevelCount));
    if (second_level_maps_[first] == 0) first_level_map_ &= ~(std::uint64_t{1} << first);
  }
  --count_;
}

Block* FreeIndex::best_in_bucket(unsigned bucket, std::size_t min_size, std::size_t max_size,
                                 unsigned scan_limit) const {
  Block* best = nullptr;
  unsigned scanned = 0;
  for (Block* b = heads_[bucket]; b != nullptr && scanned < scan_limit; b = b->free_next) {
    ++scanned;
    if (b->size < min_size || b->size > max_size) continue;
    if (best == nullptr || b->size < best->size ||
        (b->size == best->size && b->address < best->address)) {
      best = b;
      if (b->size == min_size) break;  // exact fit: nothing better exists
    }
  }
  return best;
}

unsigned FreeIndex::next_bucket_after(unsigned bucket) const {
  const unsigned first = bucket / kSecondLevelCount;
  const unsigned second = bucket % kSecondLevelCount;
  const std::uint32_t above =
      second + 1 < kSecondLevelCount ? second_level_maps_[first] & (~0u << (second + 1)) : 0;
  if (above != 0) return first * kSecondLevelCount + static_cast<unsigned>(std::countr_zero(above));
  const std::uint64_t higher =
      first + 1 < kFirstLevelCount ? first_level_map_ & (~std::uint64_t{0} << (first + 1)) : 0;
  if (higher == 0) return kNoBucket;
  const unsigned next_first = static_cast<unsigned>(std::countr_zero(higher));
  return next_first * kSecondLevelCount +
         static_cast<unsigned>(std::countr_zero(second_level_maps_[next_first]));
}

Block* FreeIndex::find(std::size_t min_size, std::size_t max_size) const {
  if (min_size == 0 || first_level_map_ == 0) return nullptr;
  const unsigned home = bucket_of(min_size);
  if (Block* head = heads_[home]; head != nullptr) {
    // An exact fit at the bucket's head would end the scan at once (repeated sizes).
    if (head->size == min_size && min_size <= max_size) return head;
    if (Block* fit = best_in_bucket(home, min_size, max_size, kScanLimit)) return fit;
  }
  const unsigned above = next_bucket_after(home);
  if (above != kNoBucket) return best_in_bucket(above, min_size, max_size, kScanLimit);
  // Nothing larger exists: a fit can only hide past the scan bound of the home bucket.
  return best_in_bucket(home, min_size, max_size, ~0u);
}

Block* FreeIndex::largest() const {
  if (first_level_map_ == 0) return nullptr;
  const unsigned first = 63 - static_cast<unsigned>(std::countl_zero(first_level_map_));
  const unsigned second = 31 - static_cast<unsigned>(std::countl_zero(second_level_maps_[first]));
  Block* largest = nullptr;
  for (Block* b = heads_[first * kSecondLevelCount + second]; b != nullptr; b = b->free_next) {
    if (largest == nullptr || b->size > largest->size) largest = b;
  }
  return largest;
}

}  // namespace npumem::core
