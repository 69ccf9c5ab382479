// Inactive-split changes (block_pool.h) kept apart from the statistics until they are
// read. Every take and release of a block pool changes them; written through, each
// costs two StatSplits (18 fields) in up to two Stats, kept apart a few additions.
// Exact once published: the current values, the accumulated allocated and freed, and
// the peaks, because each peak is the highest running sum an operation ended at and
// only one block pool keeps changes apart at a time (DeferredSplits): the next block
// pool to change publishes the changes of the last one first.
#pragma once

#include <algorithm>
#include <cstdint>

#include "npumem/stats.h"

namespace npumem::core {

class BlockPool;

// One counter's (blocks' or bytes') net changes since it was last published.
struct SplitChange {
  std::int64_t net = 0;
  std::int64_t highest = 0;  // the highest `net` an operation ended at (0 before any)
  std::int64_t added = 0;    // the sum of the operations' increases
  std::int64_t removed = 0;  // and of their decreases

  // One operation's net change.
  void add(std::int64_t change) {
    net += change;
    if (change > 0) {
      added += change;
      highest = std::max(highest, net);
    } else {
      removed -= change;
    }
  }
  bool empty() const { return added == 0 && removed == 0; }
  void publish_to(StatSplit& split, PoolKind kind, Tier tier) const {
    for (Stat* stat :
         {&split.all, &split.by_kind[static_cast<int>(kind)], &split.by_tier[static_cast<int>(tier)]}) {
      stat->peak = std::max(stat->peak, stat->current + highest);
      stat->current += net;
      stat->allocated += added;
      stat->freed += removed;
    }
  }
};

// The one block pool of an allocator whose inactive-split changes wait apart; the
// allocator publishes them before it reads, resets or copies its statistics.
class DeferredSplits {
 public:
  void publish();

 private:
  friend class BlockPool;
  BlockPool* holder_ = nullptr;
};

}  // namespace npumem::core
