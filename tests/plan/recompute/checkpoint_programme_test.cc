#include "plan/recompute/checkpoint_programme.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

namespace npumem::plan {
namespace {

// Kept bytes plus the largest run of dropped outputs, from the definition.
std::uint64_t peak_of(const std::vector<std::uint64_t>& bytes, const std::vector<bool>& keep) {
  std::uint64_t kept = 0;
  std::uint64_t run = 0;
  std::uint64_t largest_run = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (keep[i]) {
      kept += bytes[i];
      run = 0;
    } else {
      run += bytes[i];
      largest_run = std::max(largest_run, run);
    }
  }
  return kept + largest_run;
}

std::vector<std::uint64_t> random_bytes(std::uint64_t seed, std::size_t count) {
  std::mt19937_64 random(seed);
  std::vector<std::uint64_t> bytes(count);
  for (std::uint64_t& value : bytes) value = random() % 200;  // zeros included
  return bytes;
}

TEST(CheckpointProgrammeTest, LeastPeakMatchesBruteForce) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const std::vector<std::uint64_t> bytes = random_bytes(seed, seed % 13);
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << bytes.size()); ++mask) {
      std::vector<bool> keep(bytes.size());
      for (std::size_t i = 0; i < bytes.size(); ++i) keep[i] = (mask >> i & 1) != 0;
      least = std::min(least, peak_of(bytes, keep));
    }
    EXPECT_EQ(least_checkpoint_peak(bytes), least) << "seed " << seed;
  }
}

TEST(CheckpointProgrammeTest, LeastPeakOfSimpleChains) {
  EXPECT_EQ(least_checkpoint_peak({}), 0u);
  EXPECT_EQ(least_checkpoint_peak(std::vector<std::uint64_t>{7}), 7u);
  // Nine equal outputs: keep 2, segments of at most 3: 2 + 3 = 5 outputs.
  EXPECT_EQ(least_checkpoint_peak(std::vector<std::uint64_t>(9, 10)), 50u);
}

TEST(CheckpointProgrammeTest, FastestKeepsWhatIsCheapToStoreAndCostlyToRecompute) {
  // Within 20 B only one plan fits: keep the slow middle output, recompute the fast ends
  // (10 B kept + a 10 B segment); every other keep set peaks at 30 B.
  const std::vector<std::uint64_t> bytes{10, 10, 10};
  const std::vector<double> seconds{1.0, 100.0, 1.0};
  const auto choice = fastest_checkpoints(bytes, seconds, 20);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->keep, (std::vector<bool>{false, true, false}));
  EXPECT_TRUE(choice->exhaustive);
  EXPECT_FALSE(fastest_checkpoints(bytes, seconds, 19).has_value());
}

TEST(CheckpointProgrammeTest, LongVariedChainsAreThinned) {
  std::mt19937_64 random(5);
  std::vector<std::uint64_t> bytes;
  std::vector<double> seconds;
  for (int i = 0; i < 150; ++i) {
    bytes.push_back(1 + random() % 100'000);
    seconds.push_back(static_cast<double>(1 + random() % 1000));
  }
  std::uint64_t total = 0;
  for (const std::uint64_t value : bytes) total += value;
  const auto choice = fastest_checkpoints(bytes, seconds, total / 3);
  ASSERT_TRUE(choice.has_value());
  EXPECT_FALSE(choice->exhaustive);
  EXPECT_LE(peak_of(bytes, choice->keep), total / 3);
}

// The least recompute time of a keep set within `budget`, by trying every one.
double brute_force_fastest(const std::vector<std::uint64_t>& bytes,
                           const std::vector<double>& seconds, std::uint64_t budget) {
  double fastest = std::numeric_limits<double>::infinity();
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << bytes.size()); ++mask) {
    std::vector<bool> keep(bytes.size());
    double recompute = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      keep[i] = (mask >> i & 1) != 0;
      if (!keep[i]) recompute += seconds[i];
    }
    if (peak_of(bytes, keep) <= budget) fastest = std::min(fastest, recompute);
  }
  return fastest;
}

TEST(CheckpointProgrammeTest, ThePricedSearchFitsAndIsMostlyOptimalOnSmallChains) {
  int optimal = 0;
  int near = 0;
  const int chains = 150;
  for (std::uint64_t seed = 1; seed <= chains; ++seed) {
    std::mt19937_64 random(seed);
    const std::vector<std::uint64_t> bytes = random_bytes(seed, 4 + seed % 10);
    std::vector<double> seconds;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      seconds.push_back(static_cast<double>(1 + random() % 50));
    }
    std::uint64_t total = 0;
    for (const std::uint64_t value : bytes) total += value;
    const std::uint64_t least = least_checkpoint_peak(bytes);
    const std::uint64_t budget = least + (total - least) * (1 + seed % 3) / 4;
    const auto keep = priced_checkpoints(bytes, seconds, budget);
    ASSERT_TRUE(keep.has_value()) << "seed " << seed;  // the leanest plan's bound is tried
    EXPECT_LE(peak_of(bytes, *keep), budget) << "seed " << seed;
    double recompute = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) recompute += (*keep)[i] ? 0 : seconds[i];
    const double fastest = brute_force_fastest(bytes, seconds, budget);
    optimal += recompute == fastest;
    near += recompute <= 1.25 * fastest + 1e-9;
  }
  EXPECT_GE(optimal, chains * 7 / 10);
  EXPECT_GE(near, chains * 9 / 10);
}

TEST(CheckpointProgrammeTest, ALongChainIsPlannedWithinTheBudgetByThePricedSearch) {
  // 3,000 varied layers at 30 %: the programme gives up (it took 72 s), the priced search
  // plans.
  std::mt19937_64 random(11);
  std::vector<std::uint64_t> bytes;
  std::vector<double> seconds;
  std::uint64_t total = 0;
  for (int i = 0; i < 3000; ++i) {
    bytes.push_back((1 + random() % 64) << 18);
    seconds.push_back(static_cast<double>(1 + random() % 1000) / 1e6);
    total += bytes.back();
  }
  const auto choice = fastest_checkpoints(bytes, seconds, total * 3 / 10);
  ASSERT_TRUE(choice.has_value());
  EXPECT_FALSE(choice->exhaustive);
  EXPECT_LE(peak_of(bytes, choice->keep), total * 3 / 10);
  // The thinned programme alone recomputed 48 % of the forward pass; the priced search 37 %.
  double recompute = 0;
  double forward = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    forward += seconds[i];
    if (!choice->keep[i]) recompute += seconds[i];
  }
  EXPECT_LT(recompute, 0.42 * forward);
}

}  // namespace
}  // namespace npumem::plan
