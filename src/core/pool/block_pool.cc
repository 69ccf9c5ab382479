#include "core/pool/block_pool.h"

#include <iterator>
#include <stdexcept>

#include "core/pool/align.h"
#include "core/pool/pool_state.h"

namespace npumem::core {

BlockPool::~BlockPool() {
  clear();
}

void BlockPool::clear() {
  while (segments_ != nullptr) drop_segment(segments_);
  publish_inactive_split();
}

void BlockPool::set_mapping_granule(std::size_t granule) {
  // Free blocks filed before would be missing from the address index.
  if (reserved_bytes_ != 0) {
    throw std::logic_error("BlockPool::set_mapping_granule: the pool already has mapped blocks");
  }
  mapping_granule_ = granule;
  first_fit_from_ = granule / kFirstFitGranuleShare;
}

void BlockPool::file(Block* block, bool by_address, bool by_start_entry) {
  if (block->mapped) {
    if (!block->segment->closed) index_.insert(block);
    if (by_address && in_address_index(block)) by_address_.insert(block);
    if (by_start_entry && by_start(block)) free_by_start_.insert(block->address, block);
    free_bytes_ += block->size;
    note_inactive_split(block, 1);
  } else {
    unmapped_.insert(block);
  }
}

void BlockPool::unfile(Block* block, bool by_address, bool by_start_entry) {
  if (block->mapped) {
    if (!block->segment->closed) index_.remove(block);
    if (by_address && in_address_index(block)) by_address_.remove(block);
    if (by_start_entry && by_start(block)) free_by_start_.erase(block->address);
    free_bytes_ -= block->size;
    note_inactive_split(block, -1);
  } else {
    unmapped_.remove(block);
  }
}

// Both inline (measured: 21 fewer instructions per take and release pair than calls).
namespace {
inline void change(StatSplit& split, PoolKind kind, Tier tier, std::int64_t amount) {
  if (amount > 0) split.increase(kind, tier, amount);
  if (amount < 0) split.decrease(kind, tier, -amount);
}
}  // namespace

inline void BlockPool::publish_split_change(Stats& stats) const {
  change(stats.inactive_split, kind_, tier_, inactive_split_change_);
  change(stats.inactive_split_bytes, kind_, tier_, inactive_split_bytes_change_);
}

void BlockPool::publish_split_change() {
  if (totals_ != nullptr) publish_split_change(*totals_);
  if (pool_ != nullptr && pool_->own_stats) publish_split_change(pool_->stats);
  inactive_split_change_ = 0;
  inactive_split_bytes_change_ = 0;
}

// Small blocks come in runs (a layer's bias, its statistics, their gradients and
// optimizer moments) with a freed one now and then between them: two blocks either side.
bool BlockPool::near_small_block(const Block& free) const {
  constexpr int kReach = 2;
  const auto small = [&](const Block* b) { return b->allocated && b->size < first_fit_from_; };
  const Block* before = free.prev;
  const Block* after = free.next;
  for (int i = 0; i < kReach; ++i) {
    if (before != nullptr) {
      if (small(before)) return true;
      before = before->prev;
    }
    if (after != nullptr) {
      if (small(after)) return true;
      after = after->next;
    }
  }
  return false;
}

Block* BlockPool::near_small_fit(std::size_t size, std::size_t max_block) const {
  std::size_t visited = 0;
  Block* const found = index_.find_first(size, [&](const Block& free) {
    return ++visited > kSmallScanLimit || (free.size <= max_block && near_small_block(free));
  });
  return visited > kSmallScanLimit ? nullptr : found;
}

// Expandable ranges take the lowest fit for large requests and a fit near small blocks
// for small ones (see set_mapping_granule); an upper bound on the block (max_split_size)
// needs the size-ordered index.
Block* BlockPool::find_for(std::size_t size, std::size_t max_block) const {
  if (mapping_granule_ != 0 && size < first_fit_from_) {
    if (Block* near = near_small_fit(size, max_block)) return near;
  } else if (mapping_granule_ != 0 && max_block == ~std::size_t{0}) {
    return by_address_.lowest(size);
  }
  return index_.find(size, max_block);
}

// In the address index the taken block hands its node to what stays free of it, so a
// take that leaves a remainder restructures nothing.
Block* BlockPool::take(std::size_t size, std::size_t max_block, std::size_t split_remainder,
                       std::size_t unsplittable_from) {
  Block* const found = find_for(size, max_block);
  if (found == nullptr) return nullptr;
  const bool found_indexed = in_address_index(found);
  unfile(found, false);
  Block* block = found;
  // What stays free of found: its head, its tail, or (at a granule boundary inside it) both.
  Block* head = nullptr;
  Block* tail = nullptr;
  if (block->size - size >= split_remainder && block->size > size &&
      block->size < unsplittable_from) {
    const std::uintptr_t start =
        mapping_granule_ == 0 ? block->address : granule_position(*block, size);
    if (start > block->address) {
      head = block;
      block = split(block, start - block->address);
      file(head, false);
    }
    if (block->size > size) {
      tail = split(block, size);
      file(tail, false);
    }
  }
  if (found_indexed) {
    Block* const first = head != nullptr ? head : tail;
    if (first != nullptr && in_address_index(first)) {
      by_address_.replace(found, first);
    } else {
      by_address_.remove(found);
    }
    if (head != nullptr && tail != nullptr && in_address_index(tail)) by_address_.insert(tail);
  }
  block->allocated = true;
  if (block->segment->allocated_blocks++ == 0) unlink_idle(block->segment);
  publish_inactive_split();
  return block;
}

// Starting the request at an unaligned granule boundary costs as much as starting it
// at the block's start (whose first granule a neighbour already uses), so the two ends
// are the candidates; but a request of whole granules starts at the first boundary in
// the block when that maps no more and the block begins in a granule's first quarter.
// Packed against a neighbour it would span one granule more than its size, kept mapped
// after it is freed for as long as a neighbour lives on either side (activations packed
// after small tensors that last: a checkpointed MLP's training peaked at 1.104x its
// requested bytes, now 1.008x). The space it skips is then most of a granule, which
// later requests fill; a shorter one was mostly left empty (any start: resnet50_train's
// weights left 1 MiB pieces between them, 1.021x -> 1.028x).
std::uintptr_t BlockPool::granule_position(const Block& block, std::size_t size) const {
  const std::size_t granule = mapping_granule_;
  const std::uintptr_t begin = block.address - block.segment->granule_base;
  const std::uintptr_t end = begin + block.size;
  // The granules at the block's ends that a neighbour uses too.
  const std::uintptr_t shared_first = begin % granule != 0 ? begin / granule : ~std::uintptr_t{0};
  const std::uintptr_t shared_last = end % granule != 0 ? (end - 1) / granule : ~std::uintptr_t{0};
  const auto new_granules = [&](std::uintptr_t at) {
    const std::uintptr_t first = at / granule;
    const std::uintptr_t last = (at + size - 1) / granule;
    std::uintptr_t count = last - first + 1;
    if (first == shared_first) --count;
    if (last == shared_last && !(last == first && first == shared_first)) --count;  // once
    return count;
  };
  const std::uintptr_t at_end = new_granules(end - size);
  const std::uintptr_t at_start = new_granules(begin);
  if (size % granule == 0 && begin % granule != 0 && begin % granule < granule / 4) {
    const std::uintptr_t boundary = round_up(begin, granule);
    if (boundary + size <= end && new_granules(boundary) <= std::min(at_start, at_end)) {
      return block.address + (boundary - begin);
    }
  }
  // On a tie the remainder stays beside unmapped space, where growth can extend it,
  // rather than between two live blocks.
  const bool unmapped_before = block.prev != nullptr && !block.prev->mapped;
  const bool unmapped_after = block.next != nullptr && !block.next->mapped;
  const bool end_wins =
      at_end < at_start || (at_end == at_start && unmapped_before && !unmapped_after);
  return end_wins ? block.address + block.size - size : block.address;
}

Block* BlockPool::block_at(Segment& segment, std::uintptr_t address, std::uintptr_t from,
                           std::uintptr_t also_from) const {
  Block* block = nullptr;
  if (segment.closed || index_addresses_) {
    // `from` first: in a repeating iteration it is where the block begins, and a probe
    // for an address no block starts at runs to the table's next empty slot.
    block = from != 0 ? free_by_start_.find(from) : nullptr;
    if (block == nullptr && also_from != 0 && also_from != from) {
      block = free_by_start_.find(also_from);
    }
    if (block == nullptr && from != address) block = free_by_start_.find(address);
  }
  if (block == nullptr || block->segment != &segment) block = segment.first;
  while (block != nullptr && block->address > address) block = block->prev;
  while (block != nullptr && block->address + block->size <= address) block = block->next;
  return block;
}

Block* BlockPool::take_at(Segment& segment, std::uintptr_t address, std::size_t size,
                          std::uintptr_t* from, std::uintptr_t also_from) {
  Block* block = block_at(segment, address, from != nullptr ? *from : 0, also_from);
  if (block == nullptr || block->allocated || !block->mapped || block->address > address ||
      block->address + block->size < address + size) {
    return nullptr;
  }
  if (from != nullptr) *from = block->address;
  // A head left free keeps the block's start, and so its entry by start.
  const bool head = block->address < address;
  unfile(block, true, !head);
  if (head) {
    Block* tail = split(block, address - block->address);
    file(block, true, false);
    block = tail;
  }
  if (block->size > size) file(split(block, size));
  block->allocated = true;
  if (segment.allocated_blocks++ == 0) unlink_idle(&segment);
  publish_inactive_split();
  return block;
}

void BlockPool::set_closed(Segment& segment, bool closed) {
  if (segment.closed == closed) return;
  for (Block* b = segment.first; b != nullptr; b = b->next) {
    if (!b->allocated) unfile(b);
  }
  segment.closed = closed;
  for (Block* b = segment.first; b != nullptr; b = b->next) {
    if (!b->allocated) file(b);
  }
  publish_inactive_split();
}

Block* BlockPool::split(Block* block, std::size_t size) {
  Block* tail = block_records_.make();
  tail->address = block->address + size;
  tail->size = block->size - size;
  tail->segment = block->segment;
  tail->mapped = block->mapped;
  tail->prev = block;
  tail->next = block->next;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  return tail;
}

Block* BlockPool::move_record(Block* block, ObjectPool<Block>& records) {
  Block* moved = records.make();
  *moved = *block;
  if (moved->prev != nullptr) {
    moved->prev->next = moved;
  } else {
    moved->segment->first = moved;
  }
  if (moved->next != nullptr) moved->next->prev = moved;
  block_records_.recycle(block);
  return moved;
}

void BlockPool::merge_into(Block* into, Block* absorbed) {
  into->size += absorbed->size;
  into->next = absorbed->next;
  if (absorbed->next != nullptr) absorbed->next->prev = into;
  block_records_.recycle(absorbed);
}

// In the address index a free block before `block` keeps its node and grows; else
// `block` takes the node of a free block after it, so only a block between two free
// ones costs a treap restructuring (one node fewer).
Block* BlockPool::settle_free(Block* block) {
  Block* next = block->next;
  Block* prev = block->prev;
  const bool join_next = next != nullptr && !next->allocated && next->mapped == block->mapped;
  const bool join_prev = prev != nullptr && !prev->allocated && prev->mapped == block->mapped;
  if (join_next && !join_prev) {
    const bool hand_over = in_address_index(next);
    unfile(next, false);
    if (hand_over) by_address_.replace(next, block);
    merge_into(block, next);
    file(block, !hand_over);
    if (hand_over) by_address_.grew(block);
    return block;
  }
  if (join_next) {
    unfile(next);
    merge_into(block, next);
  }
  if (join_prev) {
    const bool indexed = in_address_index(prev);
    unfile(prev, false, false);  // prev keeps its start, and so its entry by start
    merge_into(prev, block);
    file(prev, !indexed, false);
    if (indexed) by_address_.grew(prev);
    return prev;
  }
  file(block);
  return block;
}

Block* BlockPool::release(Block* block) {
  block->allocated = false;
  block->requested = 0;
  block->tag = 0;
  if (--block->segment->allocated_blocks == 0) link_idle(block->segment);
  Block* merged = settle_free(block);
  publish_inactive_split();
  return merged;
}

bool BlockPool::resize(Block* block, std::size_t size, std::size_t split_remainder) {
  if (size <= block->size) {
    if (block->size - size >= split_remainder) settle_free(split(block, size));
    publish_inactive_split();
    return true;
  }
  Block* next = block->next;
  const std::size_t extra = size - block->size;
  if (next == nullptr || next->allocated || !next->mapped || next->size < extra) return false;
  unfile(next);
  if (next->size - extra >= split_remainder) {
    file(split(next, extra));
  }
  merge_into(block, next);
  publish_inactive_split();
  return true;
}

Segment* BlockPool::add_segment(std::uintptr_t address, std::size_t size, bool mapped) {
  auto* segment = new Segment{};
  segment->address = address;
  segment->size = size;
  segment->granule_base = address;
  segment->tier = tier_;
  segment->kind = kind_;
  segment->pool = pool_;
  segment->next = segments_;
  if (segments_ != nullptr) segments_->prev = segment;
  segments_ = segment;
  link_idle(segment);
  Block* block = block_records_.make();
  block->address = address;
  block->size = size;
  block->segment = segment;
  block->mapped = mapped;
  segment->first = block;
  file(block);
  if (mapped) reserved_bytes_ += size;
  publish_inactive_split();
  return segment;
}

// The blocks at the seam gain or lose a neighbour, so they are re-filed (the count of
// inactive split blocks); the rest keep their filing, as their segments' flags match.
Segment* BlockPool::split_segment(Segment& segment, Block* at) {
  Block* last = at->prev;
  if (!last->allocated) unfile(last);
  if (!at->allocated) unfile(at);
  last->next = nullptr;
  at->prev = nullptr;
  auto* back = new Segment{};
  back->address = at->address;
  back->size = segment.address + segment.size - at->address;
  back->tier = segment.tier;
  back->kind = segment.kind;
  back->pool = segment.pool;
  back->closed = segment.closed;
  back->granule_base = segment.granule_base;
  back->carved = segment.carved;
  back->first = at;
  for (Block* b = at; b != nullptr; b = b->next) {
    b->segment = back;
    if (b->allocated) ++back->allocated_blocks;
  }
  const bool was_idle = segment.allocated_blocks == 0;
  segment.allocated_blocks -= back->allocated_blocks;
  segment.size = at->address - segment.address;
  back->prev = &segment;
  back->next = segment.next;
  if (segment.next != nullptr) segment.next->prev = back;
  segment.next = back;
  if (back->allocated_blocks == 0) link_idle(back);
  if (!was_idle && segment.allocated_blocks == 0) link_idle(&segment);
  if (!last->allocated) file(last);
  if (!at->allocated) file(at);
  publish_inactive_split();
  return back;
}

// Walks `front`'s blocks to its last: the planned strategy joins an arena back only
// when it gives it back, not per allocation.
void BlockPool::join_segments(Segment& front, Segment& back) {
  set_closed(back, front.closed);
  Block* last = front.first;
  while (last->next != nullptr) last = last->next;
  Block* first = back.first;
  if (!last->allocated) unfile(last);
  if (!first->allocated) unfile(first);
  last->next = first;
  first->prev = last;
  for (Block* b = first; b != nullptr; b = b->next) b->segment = &front;
  if (back.allocated_blocks == 0) unlink_idle(&back);
  if (front.allocated_blocks == 0 && back.allocated_blocks != 0) unlink_idle(&front);
  front.allocated_blocks += back.allocated_blocks;
  front.size += back.size;
  if (back.prev != nullptr) back.prev->next = back.next;
  if (back.next != nullptr) back.next->prev = back.prev;
  if (segments_ == &back) segments_ = back.next;
  delete &back;
  if (!last->allocated && !first->allocated && last->mapped == first->mapped) {
    merge_into(last, first);
    file(last);
  } else {
    if (!last->allocated) file(last);
    if (!first->allocated) file(first);
  }
  publish_inactive_split();
}

Block* BlockPool::map_range(Block* unmapped, std::uintptr_t start, std::size_t bytes) {
  return set_mapped(unmapped, start, bytes, true);
}

void BlockPool::unmap_range(Block* free_block, std::uintptr_t start, std::size_t bytes) {
  set_mapped(free_block, start, bytes, false);
}

Block* BlockPool::set_mapped(Block* free_block, std::uintptr_t start, std::size_t bytes,
                             bool mapped) {
  unfile(free_block);
  Block* middle = free_block;
  if (start > free_block->address) {
    middle = split(free_block, start - free_block->address);
    file(free_block);
  }
  if (middle->size > bytes) file(split(middle, bytes));
  middle->mapped = mapped;
  if (mapped) {
    reserved_bytes_ += bytes;
  } else {
    reserved_bytes_ -= bytes;
  }
  Block* merged = settle_free(middle);
  publish_inactive_split();
  return merged;
}

void BlockPool::drop_segment(Segment* segment) {
  for (Block* b = segment->first; b != nullptr;) {
    Block* next = b->next;
    if (!b->allocated) unfile(b);
    if (b->mapped) reserved_bytes_ -= b->size;
    block_records_.recycle(b);
    b = next;
  }
  if (segment->prev != nullptr) segment->prev->next = segment->next;
  if (segment->next != nullptr) segment->next->prev = segment->prev;
  if (segments_ == segment) segments_ = segment->next;
  if (segment->allocated_blocks == 0) unlink_idle(segment);
  delete segment;
}

void BlockPool::link_idle(Segment* segment) {
  segment->idle_prev = nullptr;
  segment->idle_next = idle_;
  if (idle_ != nullptr) idle_->idle_prev = segment;
  idle_ = segment;
}

void BlockPool::unlink_idle(Segment* segment) {
  if (segment->idle_prev != nullptr) segment->idle_prev->idle_next = segment->idle_next;
  if (segment->idle_next != nullptr) segment->idle_next->idle_prev = segment->idle_prev;
  if (idle_ == segment) idle_ = segment->idle_next;
  segment->idle_prev = segment->idle_next = nullptr;
}

std::size_t BlockPool::remove_free_segments(const std::function<bool(const Segment&)>& keep,
                                            const std::function<void(const Segment&)>& give_back) {
  std::size_t removed = 0;
  for (Segment* segment = idle_; segment != nullptr;) {
    Segment* next = segment->idle_next;
    if (!keep(*segment)) {
      give_back(*segment);
      removed += segment->size;
      drop_segment(segment);
    }
    segment = next;
  }
  publish_inactive_split();
  return removed;
}

std::size_t BlockPool::largest_free() const {
  const Block* largest = index_.largest();
  return largest == nullptr ? 0 : largest->size;
}

}  // namespace npumem::core
