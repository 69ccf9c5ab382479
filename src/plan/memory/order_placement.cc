#include "plan/memory/order_placement.h"

#include <algorithm>
#include <numeric>

namespace npumem::plan {
namespace {

std::vector<std::uint32_t> identity_order(const PlanInstance& instance) {
  std::vector<std::uint32_t> order(instance.tensors.size());
  std::iota(order.begin(), order.end(), 0u);
  return order;
}

// Number of other tensors each tensor's lifetime overlaps, by a sweep over ops: the
// tensors alive at its start plus those starting later, before its end.
std::vector<std::uint64_t> conflict_counts(const PlanInstance& instance) {
  std::vector<std::uint64_t> starts_upto(instance.op_count + 1, 0);  // starts at ops < x
  std::vector<std::uint64_t> ends_before(instance.op_count + 1, 0);  // ends at ops < x
  for (const PlanTensor& tensor : instance.tensors) {
    ++starts_upto[tensor.first + 1];
    ++ends_before[tensor.last + 1];
  }
  std::partial_sum(starts_upto.begin(), starts_upto.end(), starts_upto.begin());
  std::partial_sum(ends_before.begin(), ends_before.end(), ends_before.begin());
  std::vector<std::uint64_t> counts;
  counts.reserve(instance.tensors.size());
  for (const PlanTensor& tensor : instance.tensors) {
    // Tensors starting no later than its end, minus those that ended before its start,
    // minus itself.
    counts.push_back(starts_upto[tensor.last + 1] - ends_before[tensor.first] - 1);
  }
  return counts;
}

// A placed tensor, with what the gap scan reads kept inline (the scan is the hot loop).
struct PlacedTensor {
  std::uint64_t offset;
  std::uint64_t end;
  std::uint32_t first;
  std::uint32_t last;
};

// The gaps below and between the placed tensors that overlap one tensor's lifetime, seen
// in order of offset: keeps the gap the rule picks.
class GapScan {
 public:
  GapScan(const PlanTensor& tensor, GapRule rule) : tensor_(tensor), rule_(rule) {}

  // Sees the next placed tensor by offset; returns true once the rule has its gap.
  bool see(const PlacedTensor& other) {
    if (other.first > tensor_.last || tensor_.first > other.last) return false;
    if (other.offset > gap_start_ && other.offset - gap_start_ >= tensor_.size) {
      if (rule_ == GapRule::first_fit) {
        best_offset_ = gap_start_;
        return true;
      }
      if (other.offset - gap_start_ < best_gap_) {
        best_gap_ = other.offset - gap_start_;
        best_offset_ = gap_start_;
      }
    }
    gap_start_ = std::max(gap_start_, other.end);
    return false;
  }

  // The chosen gap's offset, or the top of the tensors seen when none holds the tensor.
  std::uint64_t offset() const { return best_offset_ != kNoFit ? best_offset_ : gap_start_; }

 private:
  const PlanTensor& tensor_;
  const GapRule rule_;
  std::uint64_t gap_start_ = 0;  // lowest free byte above the tensors seen
  std::uint64_t best_offset_ = kNoFit;
  std::uint64_t best_gap_ = kNoFit;
};

// The placed tensors by blocks of consecutive ops: each block lists, by offset, those whose
// lifetime meets it. A tensor's gaps are then read from the lists of the few blocks its
// lifetime meets, not from every placed tensor.
class PlacedByBlock {
 public:
  explicit PlacedByBlock(const PlanInstance& instance) {
    std::uint64_t total_length = 0;
    for (const PlanTensor& tensor : instance.tensors) {
      total_length += tensor.last - tensor.first + 1;
    }
    // About two mean lifetimes per block, so that most tensors meet one or two, and at most
    // about kMaxBlocks blocks.
    const std::uint64_t mean_length =
        instance.tensors.empty() ? 1 : total_length / instance.tensors.size();
    block_width_ = static_cast<std::uint32_t>(
        std::max<std::uint64_t>({1, 2 * mean_length, instance.op_count / kMaxBlocks}));
    blocks_.resize(instance.op_count / block_width_ + 1);
  }

  void insert(const PlacedTensor& placed) {
    for (std::uint32_t block = placed.first / block_width_; block <= placed.last / block_width_;
         ++block) {
      std::vector<PlacedTensor>& list = blocks_[block];
      const auto position = std::upper_bound(
          list.begin(), list.end(), placed.offset,
          [](std::uint64_t value, const PlacedTensor& p) { return value < p.offset; });
      list.insert(position, placed);
    }
  }

  std::uint64_t seen() const { return seen_; }

  std::uint64_t choose_offset(const PlanTensor& tensor, GapRule rule) {
    GapScan scan(tensor, rule);
    const std::uint32_t first_block = tensor.first / block_width_;
    const std::uint32_t last_block = tensor.last / block_width_;
    if (first_block == last_block) {
      for (const PlacedTensor& other : blocks_[first_block]) {
        ++seen_;
        if (scan.see(other)) break;
      }
      return scan.offset();
    }
    // The blocks' lists merged by offset. A tensor listed in several blocks is seen several
    // times, which the scan allows: its later sightings start below the gap start.
    merge_.clear();
    for (std::uint32_t block = first_block; block <= last_block; ++block) {
      const std::vector<PlacedTensor>& list = blocks_[block];
      if (!list.empty()) merge_.push_back({list.data(), list.data() + list.size()});
    }
    if (merge_.size() <= kLinearMerge) {
      merge_linearly(scan);
    } else {
      merge_by_heap(scan);
    }
    return scan.offset();
  }

 private:
  static constexpr std::uint32_t kMaxBlocks = 64;
  // Up to this many lists merge by a scan of their heads, more by a heap.
  static constexpr std::size_t kLinearMerge = 4;

  struct Head {
    const PlacedTensor* next;  // the block's next tensor to merge
    const PlacedTensor* end;
  };
  static bool later(const Head& a, const Head& b) { return a.next->offset > b.next->offset; }

  void merge_linearly(GapScan& scan) {
    while (!merge_.empty()) {
      std::size_t lowest = 0;
      for (std::size_t i = 1; i < merge_.size(); ++i) {
        if (merge_[i].next->offset < merge_[lowest].next->offset) lowest = i;
      }
      Head& head = merge_[lowest];
      ++seen_;
      if (scan.see(*head.next)) return;
      if (++head.next == head.end) {
        head = merge_.back();
        merge_.pop_back();
      }
    }
  }

  void merge_by_heap(GapScan& scan) {
    std::make_heap(merge_.begin(), merge_.end(), later);
    while (!merge_.empty()) {
      std::pop_heap(merge_.begin(), merge_.end(), later);
      Head& head = merge_.back();
      ++seen_;
      if (scan.see(*head.next)) return;
      if (++head.next == head.end) {
        merge_.pop_back();
      } else {
        std::push_heap(merge_.begin(), merge_.end(), later);
      }
    }
  }

  std::uint32_t block_width_ = 1;
  std::vector<std::vector<PlacedTensor>> blocks_;
  std::uint64_t seen_ = 0;   // placed tensors the scans saw
  std::vector<Head> merge_;  // choose_offset's scratch: a min-heap by offset
};

}  // namespace

std::vector<std::uint32_t> order_by_size(const PlanInstance& instance) {
  std::vector<std::uint32_t> order = identity_order(instance);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const PlanTensor& x = instance.tensors[a];
    const PlanTensor& y = instance.tensors[b];
    return x.size != y.size ? x.size > y.size : x.length > y.length;
  });
  return order;
}

std::vector<std::uint32_t> order_by_conflicts(const PlanInstance& instance) {
  const std::vector<std::uint64_t> conflicts = conflict_counts(instance);
  std::vector<std::uint32_t> order = identity_order(instance);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (conflicts[a] != conflicts[b]) return conflicts[a] > conflicts[b];
    return instance.tensors[a].size > instance.tensors[b].size;
  });
  return order;
}

std::vector<std::uint32_t> order_by_priority(std::span<const double> priorities) {
  std::vector<std::uint32_t> order(priorities.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return priorities[a] > priorities[b]; });
  return order;
}

std::uint64_t place_in_order(const PlanInstance& instance, std::span<const std::uint32_t> order,
                             GapRule rule, std::vector<std::uint64_t>& offsets,
                             SearchClock* clock) {
  offsets.assign(instance.tensors.size(), 0);
  PlacedByBlock placed(instance);
  std::uint64_t arena = 0;
  for (const std::uint32_t index : order) {
    const PlanTensor& tensor = instance.tensors[index];
    const std::uint64_t offset = placed.choose_offset(tensor, rule);
    const std::uint64_t end = add_or_no_fit(offset, tensor.size);
    if (end == kNoFit) {
      arena = kNoFit;
      break;
    }
    offsets[index] = offset;
    arena = std::max(arena, end);
    placed.insert(PlacedTensor{offset, end, tensor.first, tensor.last});
  }
  if (clock != nullptr) clock->gap_scan_steps(order.size() + placed.seen());
  return arena;
}

}  // namespace npumem::plan
