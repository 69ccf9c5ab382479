// Free blocks by address, for address-ordered first fit: the lowest free block of at
// least a size in O(log n). A treap (priorities hashed from the address, so the
// shape is random in expectation) whose nodes keep their subtree's largest block.
// The links live in the blocks themselves: no allocation per insert.
#pragma once

#include <cstddef>

#include "core/pool/block.h"

namespace npumem::core {

class AddressIndex {
 public:
  // A block's size changes while it is in the index only as replace and grew say.
  void insert(Block* block);
  // `indexed_size`: the block's size when the index last saw it.
  void remove(Block* block, std::size_t indexed_size);
  void remove(Block* block) { remove(block, block->size); }
  // `replacement` (which lies inside old_block's former bytes, as no other indexed
  // block does) takes old_block's place, which held `old_size` bytes.
  void replace(Block* old_block, Block* replacement, std::size_t old_size);
  // An indexed block became larger in place (it absorbed free neighbours).
  void grew(Block* block);
  // The free block of at least min_size with the lowest address; nullptr when none.
  Block* lowest(std::size_t min_size) const;
  bool empty() const { return root_ == nullptr; }

 private:
  static std::size_t largest(const Block* tree) { return tree == nullptr ? 0 : tree->tree_largest; }
  static void update(Block* node);
  // Splits `tree` into the blocks below `address` and those at or above it.
  static void split(Block* tree, std::uintptr_t address, Block** below, Block** rest);
  static Block* merge(Block* low, Block* high);
  // `tree` without `block` (which it holds).
  static Block* remove_from(Block* tree, Block* block, std::size_t indexed_size);
  // Recomputes the largest sizes on the path from `tree` down to the node at
  // `address`, where a block of `old_size` bytes became smaller.
  static void refresh(Block* tree, std::uintptr_t address, std::size_t old_size);

  Block* root_ = nullptr;
};

}  // namespace npumem::core
