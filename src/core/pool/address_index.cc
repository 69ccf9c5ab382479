#include "core/pool/address_index.h"

#include <algorithm>
#include <cstdint>

namespace npumem::core {

namespace {
// A heap priority from the address (mixing, as splitmix64 does): deterministic, and
// as good as random for the treap's expected depth.
std::uint32_t priority_of(std::uintptr_t address) {
  std::uint64_t x = address;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((x ^ (x >> 31)) >> 32);
}
}  // namespace

void AddressIndex::update(Block* node) {
  node->tree_largest = std::max({node->size, largest(node->tree_left), largest(node->tree_right)});
}

void AddressIndex::split(Block* tree, std::uintptr_t address, Block** below, Block** rest) {
  if (tree == nullptr) {
    *below = *rest = nullptr;
    return;
  }
  if (tree->address < address) {
    split(tree->tree_right, address, &tree->tree_right, rest);
    *below = tree;
  } else {
    split(tree->tree_left, address, below, &tree->tree_left);
    *rest = tree;
  }
  update(tree);
}

Block* AddressIndex::merge(Block* low, Block* high) {
  if (low == nullptr) return high;
  if (high == nullptr) return low;
  if (low->tree_priority > high->tree_priority) {
    low->tree_right = merge(low->tree_right, high);
    update(low);
    return low;
  }
  high->tree_left = merge(low, high->tree_left);
  update(high);
  return high;
}

// Down the path by priority, raising each largest on the way; the block then takes
// the place of the first node of lower priority, which is split around its address.
void AddressIndex::insert(Block* block) {
  block->tree_priority = priority_of(block->address);
  Block** link = &root_;
  while (*link != nullptr && (*link)->tree_priority >= block->tree_priority) {
    Block* node = *link;
    node->tree_largest = std::max(node->tree_largest, block->size);
    link = block->address < node->address ? &node->tree_left : &node->tree_right;
  }
  split(*link, block->address, &block->tree_left, &block->tree_right);
  update(block);
  *link = block;
}

void AddressIndex::remove(Block* block, std::size_t indexed_size) {
  root_ = remove_from(root_, block, indexed_size);
}

Block* AddressIndex::remove_from(Block* tree, Block* block, std::size_t indexed_size) {
  if (tree == block) {
    Block* joined = merge(block->tree_left, block->tree_right);
    block->tree_left = block->tree_right = nullptr;
    return joined;
  }
  if (block->address < tree->address) {
    tree->tree_left = remove_from(tree->tree_left, block, indexed_size);
  } else {
    tree->tree_right = remove_from(tree->tree_right, block, indexed_size);
  }
  // Only a subtree that held the removed block's size as its largest can shrink.
  if (tree->tree_largest == indexed_size) update(tree);
  return tree;
}

void AddressIndex::replace(Block* old_block, Block* replacement, std::size_t old_size) {
  Block** link = &root_;
  while (*link != old_block) {
    link = old_block->address < (*link)->address ? &(*link)->tree_left : &(*link)->tree_right;
  }
  if (replacement != old_block) {
    replacement->tree_left = old_block->tree_left;
    replacement->tree_right = old_block->tree_right;
    replacement->tree_priority = old_block->tree_priority;
    old_block->tree_left = old_block->tree_right = nullptr;
    *link = replacement;
  }
  refresh(root_, replacement->address, old_size);
}

void AddressIndex::refresh(Block* tree, std::uintptr_t address, std::size_t old_size) {
  if (tree->address != address) {
    refresh(address < tree->address ? tree->tree_left : tree->tree_right, address, old_size);
    if (tree->tree_largest != old_size) return;  // its largest lies elsewhere
  }
  update(tree);
}

void AddressIndex::grew(Block* block) {
  for (Block* node = root_;;
       node = block->address < node->address ? node->tree_left : node->tree_right) {
    node->tree_largest = std::max(node->tree_largest, block->size);
    if (node == block) return;
  }
}

Block* AddressIndex::lowest(std::size_t min_size) const {
  Block* node = root_;
  while (node != nullptr && node->tree_largest >= min_size) {
    if (largest(node->tree_left) >= min_size) {
      node = node->tree_left;
    } else if (node->size >= min_size) {
      return node;
    } else {
      node = node->tree_right;
    }
  }
  return nullptr;
}

}  // namespace npumem::core
