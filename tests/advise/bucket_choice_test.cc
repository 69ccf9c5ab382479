#include "bucket_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

namespace npumem::cli {
namespace {

// Every way to cut `shapes` shapes into `parts` runs: the runs' (first, last).
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> cuts(std::size_t shapes,
                                                                   std::size_t parts) {
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> out;
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  std::function<void(std::size_t, std::size_t)> extend = [&](std::size_t first, std::size_t left) {
    if (left == 0) {
      if (first == shapes) out.push_back(runs);
      return;
    }
    for (std::size_t last = first; last < shapes; ++last) {
      runs.emplace_back(first, last);
      extend(last + 1, left - 1);
      runs.pop_back();
    }
  };
  extend(0, parts);
  return out;
}

// The least cost over every bucketing into exactly k buckets, by enumeration.
double brute_force_cost(const std::vector<FamilyCosts>& families, std::size_t k) {
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, std::size_t, std::uint64_t, double)> choose =
      [&](std::size_t f, std::size_t left, std::uint64_t arena, double waste) {
        if (f == families.size()) {
          if (left == 0) best = std::min(best, static_cast<double>(arena) + waste);
          return;
        }
        for (std::size_t own = 1; own <= left; ++own) {
          for (const auto& runs : cuts(families[f].shapes(), own)) {
            std::uint64_t a = arena;
            double w = waste;
            for (const auto& [first, last] : runs) {
              a = std::max(a, families[f].at(first, last).arena_bytes);
              w += families[f].at(first, last).waste;
            }
            choose(f + 1, left - own, a, w);
          }
        }
      };
  choose(0, k, 0, 0.0);
  return best;
}

TEST(BucketChoice, MatchesBruteForceOnRandomCosts) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<FamilyCosts> families;
    const std::size_t family_count = 1 + random() % 3;
    std::size_t shapes = 0;
    for (std::size_t f = 0; f < family_count; ++f) {
      FamilyCosts costs(1 + random() % 5);
      for (std::size_t i = 0; i < costs.shapes(); ++i) {
        for (std::size_t j = i; j < costs.shapes(); ++j) {
          costs.at(i, j) = {random() % 1000, static_cast<double>(random() % 1000)};
        }
      }
      shapes += costs.shapes();
      families.push_back(costs);
    }
    const std::size_t max_buckets = 1 + random() % 7;
    const auto best = best_bucketings(families, max_buckets);
    ASSERT_EQ(best.size(), max_buckets);
    for (std::size_t k = 1; k <= max_buckets; ++k) {
      const double expected = brute_force_cost(families, k);
      const auto& found = best[k - 1];
      if (k < family_count || k > shapes) {
        EXPECT_FALSE(found.has_value()) << "round " << round << " k " << k;
        continue;
      }
      ASSERT_TRUE(found.has_value()) << "round " << round << " k " << k;
      EXPECT_DOUBLE_EQ(found->cost(), expected) << "round " << round << " k " << k;
      // The buckets it names give the cost it reports, and cover every shape once.
      ASSERT_EQ(found->buckets.size(), k);
      std::uint64_t arena = 0;
      double waste = 0.0;
      std::vector<std::size_t> covered(family_count, 0);
      for (const BucketRange& r : found->buckets) {
        EXPECT_EQ(r.first, covered[r.family]) << "runs are consecutive";
        covered[r.family] = r.last + 1;
        arena = std::max(arena, families[r.family].at(r.first, r.last).arena_bytes);
        waste += families[r.family].at(r.first, r.last).waste;
      }
      for (std::size_t f = 0; f < family_count; ++f) EXPECT_EQ(covered[f], families[f].shapes());
      EXPECT_EQ(found->arena_bytes, arena);
      EXPECT_DOUBLE_EQ(found->waste, waste);
    }
  }
}

// Three shapes where the small two go together: splitting off the large one costs no
// arena and saves its padding.
TEST(BucketChoice, GroupsTheShapesThatPadCheaply) {
  FamilyCosts costs(3);
  costs.at(0, 0) = {100, 0};
  costs.at(1, 1) = {110, 0};
  costs.at(2, 2) = {1000, 0};
  costs.at(0, 1) = {110, 10};
  costs.at(1, 2) = {1000, 890};
  costs.at(0, 2) = {1000, 1790};
  const auto best = best_bucketings({costs}, 3);
  ASSERT_TRUE(best[1].has_value());
  ASSERT_EQ(best[1]->buckets.size(), 2u);
  EXPECT_EQ(best[1]->buckets[0].last, 1u);
  EXPECT_EQ(best[1]->arena_bytes, 1000u);
  EXPECT_DOUBLE_EQ(best[1]->waste, 10.0);
  EXPECT_DOUBLE_EQ(best[0]->cost(), 2790.0);
  EXPECT_DOUBLE_EQ(best[2]->cost(), 1000.0);
}

// A smaller arena can be worth more waste: the cap search finds it.
TEST(BucketChoice, TradesArenaAgainstWaste) {
  FamilyCosts costs(2);
  costs.at(0, 0) = {500, 0};
  costs.at(1, 1) = {100, 0};  // the larger shape alone plans smaller (heuristic planner)
  costs.at(0, 1) = {200, 50};
  const auto best = best_bucketings({costs}, 2);
  EXPECT_EQ(best[0]->arena_bytes, 200u);
  EXPECT_EQ(best[1]->arena_bytes, 500u);
}

}  // namespace
}  // namespace npumem::cli
