#include "core/pool/pointer_map.h"

#include <algorithm>
#include <bit>

namespace npumem::core {

PointerMap::PointerMap(std::size_t initial_slots)
    : slots_(std::bit_ceil(std::max<std::size_t>(initial_slots, 2))),
      mask_(slots_.size() - 1),
      shift_(64 - static_cast<unsigned>(std::countr_zero(slots_.size()))) {}

void PointerMap::insert(std::uintptr_t address, Block* block) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const std::size_t i = find_slot(address);
  if (slots_[i].address == 0) ++size_;
  slots_[i] = {address, block};
}

Block* PointerMap::erase(std::uintptr_t address) {
  if (address == 0) return nullptr;
  std::size_t hole = find_slot(address);
  Block* block = slots_[hole].block;
  if (block == nullptr) return nullptr;
  slots_[hole] = {};
  --size_;
  // Shift later members of the probe run back so lookups never stop early.
  for (std::size_t i = (hole + 1) & mask_; slots_[i].address != 0; i = (i + 1) & mask_) {
    const std::size_t want = home(slots_[i].address);
    const bool movable = ((i - want) & mask_) >= ((i - hole) & mask_);
    if (movable) {
      slots_[hole] = slots_[i];
      slots_[i] = {};
      hole = i;
    }
  }
  return block;
}

void PointerMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  mask_ = slots_.size() - 1;
  --shift_;
  if (slots_.size() >= kRunsFromSlots) {
    run_mask_ = (std::size_t{1} << kRunShift) - 1;
    key_mask_ = ~(std::uint64_t{run_mask_} << (kStepShift - 6));
  }
  size_ = 0;
  for (const Slot& slot : old) {
    if (slot.address != 0) insert(slot.address, slot.block);
  }
}

}  // namespace npumem::core
