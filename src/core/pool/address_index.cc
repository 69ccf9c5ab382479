#include "core/pool/address_index.h"

#include <algorithm>

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

AddressIndex::AddressIndex() : nodes_(1) {}

void AddressIndex::update(Index node) {
  Node& n = nodes_[node];
  n.largest = std::max({n.size, largest(n.left), largest(n.right)});
}

void AddressIndex::split(Index tree, std::uintptr_t address, Index* below, Index* rest) {
  if (tree == kNone) {
    *below = *rest = kNone;
    return;
  }
  if (nodes_[tree].address < address) {
    Index right_below = kNone;
    split(nodes_[tree].right, address, &right_below, rest);
    nodes_[tree].right = right_below;
    *below = tree;
  } else {
    Index left_rest = kNone;
    split(nodes_[tree].left, address, below, &left_rest);
    nodes_[tree].left = left_rest;
    *rest = tree;
  }
  update(tree);
}

AddressIndex::Index AddressIndex::merge(Index low, Index high) {
  if (low == kNone) return high;
  if (high == kNone) return low;
  if (nodes_[low].priority > nodes_[high].priority) {
    const Index right = merge(nodes_[low].right, high);
    nodes_[low].right = right;
    update(low);
    return low;
  }
  const Index left = merge(low, nodes_[high].left);
  nodes_[high].left = left;
  update(high);
  return high;
}

// Down the path by priority, raising each largest on the way; the new node then
// takes the place of the first node of lower priority, which is split around it.
void AddressIndex::insert(Block* block) {
  Index node = kNone;
  if (free_nodes_.empty()) {
    node = static_cast<Index>(nodes_.size());
    nodes_.emplace_back();
  } else {
    node = free_nodes_.back();
    free_nodes_.pop_back();
  }
  nodes_[node] = {
      block->address, block->size, block->size, block, kNone, kNone, priority_of(block->address)};
  block->tree_node = node;
  Index* link = &root_;
  while (*link != kNone && nodes_[*link].priority >= nodes_[node].priority) {
    Node& above = nodes_[*link];
    above.largest = std::max(above.largest, block->size);
    link = block->address < above.address ? &above.left : &above.right;
  }
  Index below = kNone;
  Index rest = kNone;
  split(*link, block->address, &below, &rest);
  nodes_[node].left = below;
  nodes_[node].right = rest;
  update(node);
  *link = node;
}

void AddressIndex::remove(Block* block) {
  const Index node = block->tree_node;
  root_ = remove_from(root_, nodes_[node].address, nodes_[node].size);
  nodes_[node].block = nullptr;
  free_nodes_.push_back(node);
}

AddressIndex::Index AddressIndex::remove_from(Index tree, std::uintptr_t address,
                                              std::size_t old_size) {
  Node& n = nodes_[tree];
  if (n.address == address) return merge(n.left, n.right);
  if (address < n.address) {
    const Index left = remove_from(n.left, address, old_size);
    nodes_[tree].left = left;
  } else {
    const Index right = remove_from(n.right, address, old_size);
    nodes_[tree].right = right;
  }
  // Only a subtree that held the removed block's size as its largest can shrink.
  if (nodes_[tree].largest == old_size) update(tree);
  return tree;
}

AddressIndex::Index& AddressIndex::link_to(std::uintptr_t address) {
  Index* link = &root_;
  while (nodes_[*link].address != address) {
    link = address < nodes_[*link].address ? &nodes_[*link].left : &nodes_[*link].right;
  }
  return *link;
}

void AddressIndex::replace(Block* old_block, Block* replacement) {
  const Index node = old_block->tree_node;
  Node& n = nodes_[node];
  const std::size_t old_size = n.size;
  const bool larger = replacement->size >= old_size;
  // The node keeps its place: no indexed block lies between the two addresses.
  n.address = replacement->address;
  n.size = replacement->size;
  n.block = replacement;
  replacement->tree_node = node;
  if (larger) {
    grew(replacement);
  } else {
    refresh(root_, n.address, old_size);
  }
}

void AddressIndex::refresh(Index tree, std::uintptr_t address, std::size_t old_size) {
  if (nodes_[tree].address != address) {
    refresh(address < nodes_[tree].address ? nodes_[tree].left : nodes_[tree].right, address,
            old_size);
    if (nodes_[tree].largest != old_size) return;  // its largest lies elsewhere
  }
  update(tree);
}

void AddressIndex::grew(Block* block) {
  Node& grown = nodes_[block->tree_node];
  grown.size = block->size;
  for (Index node = root_;;
       node = block->address < nodes_[node].address ? nodes_[node].left : nodes_[node].right) {
    nodes_[node].largest = std::max(nodes_[node].largest, block->size);
    if (node == block->tree_node) return;
  }
}

Block* AddressIndex::lowest(std::size_t min_size) const {
  Index node = root_;
  while (node != kNone && nodes_[node].largest >= min_size) {
    const Node& n = nodes_[node];
    if (largest(n.left) >= min_size) {
      node = n.left;
    } else if (n.size >= min_size) {
      return n.block;
    } else {
      node = n.right;
    }
  }
  return nullptr;
}

}  // namespace npumem::core
