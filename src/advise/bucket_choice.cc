#include "bucket_choice.h"

#include <algorithm>
#include <limits>

namespace npumem::cli {
namespace {

constexpr double kImpossible = std::numeric_limits<double>::infinity();

// Least waste with every bucket's arena at most a cap.
class CappedSolution {
 public:
  CappedSolution(const std::vector<FamilyCosts>& families, std::size_t max_buckets,
                 std::uint64_t cap)
      : families_(families), max_buckets_(max_buckets) {
    for (const FamilyCosts& family : families) solve_family(family, cap);
    combine();
  }

  double waste(std::size_t buckets) const { return total_.back()[buckets]; }

  Bucketing bucketing(std::size_t buckets) const {
    Bucketing out;
    for (std::size_t f = families_.size(); f-- > 0;) {
      const std::size_t own = taken_[f][buckets];
      buckets -= own;
      std::vector<BucketRange> ranges;
      for (std::size_t end = families_[f].shapes(), k = own; k > 0; --k) {
        const std::size_t first = start_[f][k][end];
        ranges.push_back({f, first, end - 1});
        end = first;
      }
      out.buckets.insert(out.buckets.begin(), ranges.rbegin(), ranges.rend());
    }
    for (const BucketRange& r : out.buckets) {
      const RangeCost& cost = families_[r.family].at(r.first, r.last);
      out.arena_bytes = std::max(out.arena_bytes, cost.arena_bytes);
      out.waste += cost.waste;
    }
    return out;
  }

 private:
  // least_[f][k][j]: least waste of the family's first j shapes in k buckets; start_:
  // where the last of those buckets starts.
  void solve_family(const FamilyCosts& family, std::uint64_t cap) {
    const std::size_t n = family.shapes();
    const std::size_t most = std::min(n, max_buckets_);
    std::vector<std::vector<double>> least(most + 1, std::vector<double>(n + 1, kImpossible));
    std::vector<std::vector<std::size_t>> start(most + 1, std::vector<std::size_t>(n + 1, 0));
    least[0][0] = 0.0;
    for (std::size_t k = 1; k <= most; ++k) {
      for (std::size_t j = k; j <= n; ++j) {
        for (std::size_t i = k - 1; i < j; ++i) {
          const RangeCost& cost = family.at(i, j - 1);
          if (least[k - 1][i] == kImpossible || cost.arena_bytes > cap) continue;
          const double waste = least[k - 1][i] + cost.waste;
          if (waste < least[k][j]) {
            least[k][j] = waste;
            start[k][j] = i;
          }
        }
      }
    }
    least_.push_back(std::move(least));
    start_.push_back(std::move(start));
  }

  // total_[f][t]: least waste of families 0..f in t buckets; taken_: family f's share.
  void combine() {
    std::vector<double> before(max_buckets_ + 1, kImpossible);
    before[0] = 0.0;
    for (std::size_t f = 0; f < families_.size(); ++f) {
      const std::size_t n = families_[f].shapes();
      std::vector<double> total(max_buckets_ + 1, kImpossible);
      std::vector<std::size_t> taken(max_buckets_ + 1, 0);
      for (std::size_t t = 1; t <= max_buckets_; ++t) {
        for (std::size_t own = 1; own <= std::min(t, least_[f].size() - 1); ++own) {
          const double waste = before[t - own] + least_[f][own][n];
          if (waste < total[t]) {
            total[t] = waste;
            taken[t] = own;
          }
        }
      }
      before = total;
      total_.push_back(std::move(total));
      taken_.push_back(std::move(taken));
    }
  }

  const std::vector<FamilyCosts>& families_;
  std::size_t max_buckets_;
  std::vector<std::vector<std::vector<double>>> least_;
  std::vector<std::vector<std::vector<std::size_t>>> start_;
  std::vector<std::vector<double>> total_;
  std::vector<std::vector<std::size_t>> taken_;
};

}  // namespace

// The optimum's largest arena is one of the ranges' arenas: with that as the cap, the
// least waste under it gives the optimum; every other cap gives an upper bound.
std::vector<std::optional<Bucketing>> best_bucketings(const std::vector<FamilyCosts>& families,
                                                      std::size_t max_buckets) {
  std::vector<std::optional<Bucketing>> best(max_buckets);
  if (families.empty() || max_buckets == 0) return best;
  std::vector<std::uint64_t> caps;
  for (const FamilyCosts& family : families) {
    for (std::size_t i = 0; i < family.shapes(); ++i) {
      for (std::size_t j = i; j < family.shapes(); ++j) caps.push_back(family.at(i, j).arena_bytes);
    }
  }
  std::sort(caps.begin(), caps.end());
  caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
  std::vector<double> best_cost(max_buckets + 1, kImpossible);
  std::vector<std::uint64_t> best_cap(max_buckets + 1, 0);
  for (std::uint64_t cap : caps) {
    const CappedSolution solution(families, max_buckets, cap);
    for (std::size_t k = 1; k <= max_buckets; ++k) {
      const double cost = static_cast<double>(cap) + solution.waste(k);
      if (cost < best_cost[k]) {
        best_cost[k] = cost;
        best_cap[k] = cap;
      }
    }
  }
  for (std::size_t k = 1; k <= max_buckets; ++k) {
    if (best_cost[k] == kImpossible) continue;
    best[k - 1] = CappedSolution(families, max_buckets, best_cap[k]).bucketing(k);
  }
  return best;
}

}  // namespace npumem::cli
