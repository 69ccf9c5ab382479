#include "core/block_pool.h"

namespace npumem::core {

BlockPool::~BlockPool() {
  while (segments_ != nullptr) drop_segment(segments_);
}

Block* BlockPool::take(std::size_t size, std::size_t max_block, std::size_t split_remainder,
                       std::size_t unsplittable_from) {
  Block* block = index_.find(size, max_block);
  if (block == nullptr) return nullptr;
  index_.remove(block);
  free_bytes_ -= block->size;
  if (block->size - size >= split_remainder && block->size > size &&
      block->size < unsplittable_from) {
    Block* tail = split(block, size);
    index_.insert(tail);
    free_bytes_ += tail->size;
  }
  block->allocated = true;
  ++block->segment->allocated_blocks;
  return block;
}

Block* BlockPool::split(Block* block, std::size_t size) {
  Block* tail = block_records_.make();
  tail->address = block->address + size;
  tail->size = block->size - size;
  tail->segment = block->segment;
  tail->prev = block;
  tail->next = block->next;
  if (block->next != nullptr) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  return tail;
}

Segment* BlockPool::add_segment(std::uintptr_t address, std::size_t size) {
  auto* segment = new Segment{};
  segment->address = address;
  segment->size = size;
  segment->tier = tier_;
  segment->kind = kind_;
  segment->pool = pool_;
  segment->next = segments_;
  if (segments_ != nullptr) segments_->prev = segment;
  segments_ = segment;
  Block* block = block_records_.make();
  block->address = address;
  block->size = size;
  block->segment = segment;
  segment->first = block;
  index_.insert(block);
  free_bytes_ += size;
  reserved_bytes_ += size;
  return segment;
}

void BlockPool::merge_into(Block* into, Block* absorbed) {
  into->size += absorbed->size;
  into->next = absorbed->next;
  if (absorbed->next != nullptr) absorbed->next->prev = into;
  block_records_.recycle(absorbed);
}

Block* BlockPool::release(Block* block) {
  block->allocated = false;
  block->requested = 0;
  block->tag = 0;
  --block->segment->allocated_blocks;
  free_bytes_ += block->size;
  if (Block* next = block->next; next != nullptr && !next->allocated) {
    index_.remove(next);
    merge_into(block, next);
  }
  if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
    index_.remove(prev);
    merge_into(prev, block);
    block = prev;
  }
  index_.insert(block);
  return block;
}

void BlockPool::drop_segment(Segment* segment) {
  for (Block* b = segment->first; b != nullptr;) {
    Block* next = b->next;
    if (!b->allocated) {
      index_.remove(b);
      free_bytes_ -= b->size;
    }
    block_records_.recycle(b);
    b = next;
  }
  if (segment->prev != nullptr) segment->prev->next = segment->next;
  if (segment->next != nullptr) segment->next->prev = segment->prev;
  if (segments_ == segment) segments_ = segment->next;
  reserved_bytes_ -= segment->size;
  delete segment;
}

std::size_t BlockPool::remove_free_segments(const std::function<void(const Segment&)>& give_back) {
  std::size_t removed = 0;
  for (Segment* segment = segments_; segment != nullptr;) {
    Segment* next = segment->next;
    if (segment->allocated_blocks == 0) {
      give_back(*segment);
      removed += segment->size;
      drop_segment(segment);
    }
    segment = next;
  }
  return removed;
}

std::size_t BlockPool::largest_free() const {
  const Block* largest = index_.largest();
  return largest == nullptr ? 0 : largest->size;
}

std::size_t BlockPool::free_segment_bytes() const {
  std::size_t bytes = 0;
  for (const Segment* s = segments_; s != nullptr; s = s->next) {
    if (s->allocated_blocks == 0) bytes += s->size;
  }
  return bytes;
}

}  // namespace npumem::core
