// The blocks of one pool kind (small or large) on one tier of one pool: its
// segments, their blocks, and a free index. Splits blocks on allocation and
// coalesces free neighbours on release. Free blocks of expandable ranges may be
// unmapped (no physical memory); they sit in a second index and never serve a
// request until mapped. Knows nothing of devices; of the statistics it keeps only
// its inactive split blocks (free mapped blocks sharing their segment), in its pool's
// Stats and the allocator's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/pool/address_index.h"
#include "core/pool/block.h"
#include "core/pool/free_index.h"
#include "core/pool/object_pool.h"
#include "core/pool/pointer_map.h"

namespace npumem::core {

class BlockPool {
 public:
  // `pool` and `totals` (each may be nullptr) receive the inactive split counts.
  BlockPool(Tier tier, PoolKind kind, PoolState* pool, Stats* totals = nullptr)
      : tier_(tier), kind_(kind), pool_(pool), totals_(totals) {}
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Takes a free mapped block of at least `size` and at most `max_block` bytes,
  // splitting off what the request leaves when that is at least split_remainder bytes
  // and the block is smaller than unsplittable_from (PyTorch's max_split_size: big
  // blocks stay whole). The request goes at the block's start, or with a mapping
  // granule set at its end or at a granule boundary inside it (see granule_position),
  // leaving a tail, a head, or both.
  Block* take(std::size_t size, std::size_t max_block, std::size_t split_remainder,
              std::size_t unsplittable_from);
  // Takes exactly [address, address + size) of `segment` (one of this pool's) when it
  // lies inside one free mapped block; nullptr otherwise. The planned strategy's offsets.
  // In a closed segment, or an open one of a pool that indexes addresses, that block is
  // the free one starting at `*from` (where the block that held the range began at an
  // earlier take), at `also_from` (where it began the take before, for ranges whose
  // block alternates between two starts) or at `address`: a lookup by start address,
  // one probe for the same iteration's takes repeated; else one walked to from the
  // segment's first block. `*from` becomes this take's.
  Block* take_at(Segment& segment, std::uintptr_t address, std::size_t size,
                 std::uintptr_t* from = nullptr, std::uintptr_t also_from = 0);
  // Moves allocated `block`'s record into `records` and returns the new record; its
  // neighbours and segment point to it, and the old record is recycled here.
  Block* move_record(Block* block, ObjectPool<Block>& records);
  // Indexes the free blocks of open segments by address too, for take_at (the planned
  // strategy's holes); before the first segment is added.
  void index_addresses() { index_addresses_ = true; }
  // With index_addresses(): the free mapped block that starts at `address`, or nullptr.
  Block* free_block_starting_at(std::uintptr_t address) const {
    return index_addresses_ ? free_by_start_.find(address) : nullptr;
  }
  // Opens or closes a segment's free space to take() (see Segment::closed).
  void set_closed(Segment& segment, bool closed);
  // Frees an allocated block, merging it with free neighbours; returns the merged block.
  Block* release(Block* block);
  // Grows an allocated block in place into its free mapped successor, or shrinks it
  // (freeing the tail when at least split_remainder). False when it cannot grow.
  bool resize(Block* block, std::size_t size, std::size_t split_remainder);

  // Adds a new segment as one free block, mapped (a device segment) or not (a
  // reserved expandable range).
  Segment* add_segment(std::uintptr_t address, std::size_t size, bool mapped = true);
  // Splits `segment` before `at`, one of its blocks other than the first: the blocks
  // from `at` on become a segment of their own (same flags and granule base), returned.
  Segment* split_segment(Segment& segment, Block* at);
  // Joins `back`, which starts where `front` ends, into `front` (taking `front`'s
  // flags); free neighbours at the seam merge. `back` is gone after.
  void join_segments(Segment& front, Segment& back);
  // Removes every segment with no allocated block that `keep` does not name; calls
  // give_back(segment) for each before its records are dropped. Returns the bytes.
  // Visits only such segments (kept in their own list): growth calls this each time
  // it passes the high-water mark, so a walk of all segments would cost O(live).
  std::size_t remove_free_segments(const std::function<bool(const Segment&)>& keep,
                                   const std::function<void(const Segment&)>& give_back);
  // Drops every record (the owner has returned the memory).
  void clear();

  // Expandable ranges: the granule their physical memory is mapped in (0: none). Set
  // before any block is mapped. Such a pool takes free blocks for requests of at least
  // 1/kFirstFitGranuleShare of a granule by address-ordered first fit, not best fit:
  // those blocks decide how many granules stay mapped, and packed towards the range's
  // start they leave free space gathered in whole granules at its end (unmapped and
  // reused for any size) instead of slivers between live blocks that drift from one
  // training iteration to the next (under best fit resnet50_train's peak was 464
  // granules after two steps, 467 after three). Smaller requests take a free block
  // near live small blocks when one is among the first kSmallScanLimit fits, else the
  // best fit: small blocks that outlive an iteration (optimizer moments, statistics,
  // biases' gradients) then gather beside each other, not in slivers between
  // activations where each keeps a granule mapped (granules above the fewest whole ones
  // that hold the peak: the 4 shared traces 47 -> 40, bench/torch_workloads_bench.py's
  // 27 workloads 27 -> 26; a CNN under AdamW with gradient accumulation 1.178x ->
  // 1.075x). Throws std::logic_error once blocks are mapped.
  void set_mapping_granule(std::size_t granule);
  std::size_t mapping_granule() const { return mapping_granule_; }
  // Expandable ranges: the best-fitting unmapped block of at least `size`.
  Block* find_unmapped(std::size_t size) const { return unmapped_.find(size, ~std::size_t{0}); }
  // The first unmapped block of at least min_size that accept(block) takes.
  template <typename Accept>
  Block* find_unmapped_if(std::size_t min_size, Accept&& accept) const {
    return unmapped_.find_first(min_size, accept);
  }
  // Marks [start, start + bytes) inside an unmapped block as mapped and free; returns
  // the free block they end up in after merging.
  Block* map_range(Block* unmapped, std::uintptr_t start, std::size_t bytes);
  // Marks [start, start + bytes) inside a free mapped block as unmapped.
  void unmap_range(Block* free_block, std::uintptr_t start, std::size_t bytes);
  // The largest free mapped block, or nullptr.
  Block* largest_free_block() const { return index_.largest(); }
  // The first free mapped block of at least min_size that accept(block) takes.
  template <typename Accept>
  Block* find_free(std::size_t min_size, Accept&& accept) const {
    return index_.find_first(min_size, accept);
  }

  Tier tier() const { return tier_; }
  PoolKind kind() const { return kind_; }
  std::size_t free_bytes() const { return free_bytes_; }          // free and mapped
  std::size_t reserved_bytes() const { return reserved_bytes_; }  // mapped
  std::size_t largest_free() const;
  const Segment* segments() const { return segments_; }
  Segment* segments() { return segments_; }

 private:
  Block* split(Block* block, std::size_t size);
  // Where in a free block a request of `size` bytes goes: at its start or its end,
  // whichever touches fewer granules that no neighbour uses (on a tie, the end only
  // when unmapped space lies before the block and not after it), or, for whole
  // granules, at the block's first granule boundary (see the definition). Whole free
  // granules can be unmapped and reused; partly used ones cannot.
  std::uintptr_t granule_position(const Block& block, std::size_t size) const;
  void merge_into(Block* into, Block* absorbed);
  // Merges a free block with free neighbours in the same mapped state, files it in its
  // index and returns the merged block.
  Block* settle_free(Block* block);
  // Marks [start, start + bytes) of a free block mapped or unmapped; returns the free
  // block it ends up in after merging.
  Block* set_mapped(Block* free_block, std::uintptr_t start, std::size_t bytes, bool mapped);
  // by_address false: the caller keeps the address index right itself; by_start_entry
  // false: free_by_start_ too (a block that keeps its start keeps its entry).
  void file(Block* block, bool by_address = true, bool by_start_entry = true);
  void unfile(Block* block, bool by_address = true, bool by_start_entry = true);
  bool in_address_index(const Block* block) const {
    return mapping_granule_ != 0 && block->mapped && !block->segment->closed &&
           block->size >= first_fit_from_;
  }
  // Whether a free mapped block of its segment is in free_by_start_.
  bool by_start(const Block* block) const { return index_addresses_ || block->segment->closed; }
  // The block of `segment` that holds `address` (see take_at).
  Block* block_at(Segment& segment, std::uintptr_t address, std::uintptr_t from,
                  std::uintptr_t also_from) const;
  // A filed block keeps its neighbours' presence until unfiled (splits and merges
  // unfile first), so file and unfile see the same answer.
  static bool is_split(const Block* block) {
    return block->prev != nullptr || block->next != nullptr;
  }
  // file and unfile note the change to the inactive splits; each public operation that
  // files or unfiles ends by publishing its net change, once, as PyTorch does (their
  // allocated and freed add up net changes). Every operation unfiles before it files,
  // so no state between its steps is above both ends: the peaks are those a count of
  // each step would reach.
  void note_inactive_split(const Block* block, std::int64_t sign) {
    if (!is_split(block)) return;
    inactive_split_change_ += sign;
    inactive_split_bytes_change_ += sign * static_cast<std::int64_t>(block->size);
  }
  void publish_inactive_split() {
    if (inactive_split_change_ != 0 || inactive_split_bytes_change_ != 0) publish_split_change();
  }
  void publish_split_change();                    // into the pool's and the totals
  void publish_split_change(Stats& stats) const;  // into one of them
  void drop_segment(Segment* segment);
  void link_idle(Segment* segment);
  void unlink_idle(Segment* segment);

  Tier tier_;
  PoolKind kind_;
  PoolState* pool_;
  Stats* totals_;
  FreeIndex index_;  // free mapped blocks of open segments
  // Free mapped blocks by start address, of closed segments and, with
  // index_addresses(), of open ones too: take_at finds its block with a probe or two (a
  // hash table; a std::map by address cost a tree walk and rebalancing on every split
  // and merge, a planned hit's time a third more).
  PointerMap free_by_start_{16};  // small until used: most pools index no address
  bool index_addresses_ = false;
  FreeIndex unmapped_;  // free unmapped blocks
  // Free mapped blocks of at least first_fit_from_, with a mapping granule only.
  AddressIndex by_address_;
  ObjectPool<Block> block_records_;
  Segment* segments_ = nullptr;
  Segment* idle_ = nullptr;  // segments with no allocated block
  std::size_t free_bytes_ = 0;
  std::int64_t inactive_split_change_ = 0;  // not yet published (blocks)
  std::int64_t inactive_split_bytes_change_ = 0;
  std::size_t reserved_bytes_ = 0;
  // Whether a live block below first_fit_from_ lies within two blocks of `free`.
  bool near_small_block(const Block& free) const;
  // The first free block of at least `size` (and at most max_block) near small blocks
  // among the first kSmallScanLimit that hold `size`, smaller size classes first.
  Block* near_small_fit(std::size_t size, std::size_t max_block) const;
  // The free block take() splits for a request of `size`, or nullptr.
  Block* find_for(std::size_t size, std::size_t max_block) const;

  static constexpr std::size_t kFirstFitGranuleShare = 8;
  static constexpr std::size_t kSmallScanLimit = 16;
  std::size_t mapping_granule_ = 0;
  std::size_t first_fit_from_ = 0;  // requests and free blocks in the address index
};

}  // namespace npumem::core
