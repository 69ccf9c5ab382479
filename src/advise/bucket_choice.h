// Choosing bucket boundaries for `npumem advise buckets`. Shapes come in families
// (shapes that can be padded to one another), each sorted by size; a bucket is a run
// of consecutive shapes of one family, every shape padded to the bucket's largest.
// One arena holds the largest bucket's plan (the planned strategy's shared arena), so
// a bucketing costs the largest arena of its buckets plus the sum of their padding
// waste. Exact, by dynamic programming over each possible arena cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace npumem::cli {

struct RangeCost {
  std::uint64_t arena_bytes = 0;  // of the plan that serves the range's shapes
  double waste = 0.0;             // padding waste of the range's shapes, in bytes
};

// The costs of every run first..last (first <= last) of a family's `shapes` shapes.
class FamilyCosts {
 public:
  explicit FamilyCosts(std::size_t shapes) : shapes_(shapes), costs_(shapes * shapes) {}
  std::size_t shapes() const { return shapes_; }
  RangeCost& at(std::size_t first, std::size_t last) { return costs_[first * shapes_ + last]; }
  const RangeCost& at(std::size_t first, std::size_t last) const {
    return costs_[first * shapes_ + last];
  }

 private:
  std::size_t shapes_;
  std::vector<RangeCost> costs_;
};

struct BucketRange {
  std::size_t family = 0;
  std::size_t first = 0;  // shapes first..last of the family
  std::size_t last = 0;
};

struct Bucketing {
  std::uint64_t arena_bytes = 0;     // the largest of its buckets'
  double waste = 0.0;                // the sum of its buckets'
  std::vector<BucketRange> buckets;  // by family, then by shape
  double cost() const { return static_cast<double>(arena_bytes) + waste; }
};

// For k = 1 .. max_buckets (element k - 1): the bucketing into exactly k buckets, at
// least one per family, of least cost; nullopt where k is below the number of
// families or above the number of shapes.
std::vector<std::optional<Bucketing>> best_bucketings(const std::vector<FamilyCosts>& families,
                                                      std::size_t max_buckets);

}  // namespace npumem::cli
