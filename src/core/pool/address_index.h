// Free blocks by address, for address-ordered first fit: the lowest free block of at
// least a size in O(log n). A treap (priorities hashed from the address, so the
// shape is random in expectation) whose nodes keep their subtree's largest block.
// Nodes live in the index's own array, addressed by 32-bit indices, and copy the
// block's address and size: a search touches no block record, and a block carries
// only its node's index (in padding it had anyway).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pool/block.h"

namespace npumem::core {

class AddressIndex {
 public:
  AddressIndex();
  // A block's size changes while it is in the index only as replace and grew say.
  void insert(Block* block);
  void remove(Block* block);
  // `replacement` (which lies inside old_block's former bytes, or right before them,
  // with no other indexed block between) takes old_block's place.
  void replace(Block* old_block, Block* replacement);
  // An indexed block became larger in place (it absorbed free neighbours).
  void grew(Block* block);
  // The free block of at least min_size with the lowest address; nullptr when none.
  Block* lowest(std::size_t min_size) const;

 private:
  using Index = std::uint32_t;
  static constexpr Index kNone = 0;  // node 0 is never used, so 0 means "no node"
  struct Node {
    std::uintptr_t address = 0;
    std::size_t size = 0;
    std::size_t largest = 0;  // of its subtree
    Block* block = nullptr;
    Index left = kNone;
    Index right = kNone;
    std::uint32_t priority = 0;
  };

  std::size_t largest(Index tree) const { return tree == kNone ? 0 : nodes_[tree].largest; }
  void update(Index node);
  // Splits `tree` into the nodes below `address` and those at or above it.
  void split(Index tree, std::uintptr_t address, Index* below, Index* rest);
  Index merge(Index low, Index high);
  // `tree` without the node at `address`, which held `old_size` bytes.
  Index remove_from(Index tree, std::uintptr_t address, std::size_t old_size);
  // Recomputes the largest sizes on the path from `tree` down to the node at
  // `address`, whose block held `old_size` bytes and now holds fewer.
  void refresh(Index tree, std::uintptr_t address, std::size_t old_size);
  Index& link_to(std::uintptr_t address);

  std::vector<Node> nodes_;
  std::vector<Index> free_nodes_;
  Index root_ = kNone;
};

}  // namespace npumem::core
