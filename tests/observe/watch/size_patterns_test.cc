#include <gtest/gtest.h>

#include "npumem/allocator.h"
#include "npumem/hooks.h"
#include "npumem/units.h"

namespace npumem {
namespace {

TEST(SizePatterns, HistogramAndMostFrequentSizes) {
  SizePatternAnalyser analyser;
  for (const std::uint64_t size : {100, 100, 100, 4096, 4096, 5000, 1 << 20}) analyser.record(size);
  const SizePatterns patterns = analyser.patterns(2);
  EXPECT_EQ(patterns.allocations, 7u);
  EXPECT_EQ(patterns.distinct_sizes, 4u);
  using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  EXPECT_EQ(patterns.histogram, (Pairs{{128, 3}, {4096, 2}, {8192, 1}, {1 << 20, 1}}));
  EXPECT_EQ(patterns.most_frequent, (Pairs{{100, 3}, {4096, 2}}));
  EXPECT_TRUE(patterns.repetition.empty());
}

TEST(SizePatterns, RepetitionComparesEachIterationWithThePrevious) {
  SizePatternAnalyser analyser;
  for (const std::uint64_t size : {10, 20, 20}) analyser.record(size);
  analyser.tick();
  for (const std::uint64_t size : {10, 20, 20}) analyser.record(size);  // the same
  analyser.tick();
  for (const std::uint64_t size : {10, 20, 30, 40}) analyser.record(size);  // half the same
  analyser.tick();
  EXPECT_EQ(analyser.patterns().repetition, (std::vector<double>{1.0, 0.5}));
}

// An iteration that made nothing repeats nothing and gives the next nothing to repeat:
// it read as 100% (and the one after it as 0%).
TEST(SizePatterns, IterationsThatAllocateNothingAreLeftOut) {
  SizePatternAnalyser analyser;
  analyser.record(100);
  analyser.tick();
  analyser.tick();
  analyser.tick();
  analyser.record(100);
  analyser.tick();
  analyser.tick();
  EXPECT_EQ(analyser.patterns().repetition, (std::vector<double>{1.0}));
}

TEST(SizePatterns, InstalledOnHooksCountsRequestedSizes) {
  Allocator allocator(make_device("sim:hbm=64MiB,ddr=0"));
  auto hooks = std::make_shared<Hooks>();
  allocator.add_observer(hooks);
  SizePatternAnalyser analyser;
  analyser.install(*hooks);
  for (int i = 0; i < 3; ++i) allocator.deallocate(allocator.allocate(1000));
  const SizePatterns patterns = analyser.patterns();
  ASSERT_EQ(patterns.most_frequent.size(), 1u);
  EXPECT_EQ(patterns.most_frequent[0], (std::pair<std::uint64_t, std::uint64_t>{1000, 3}));
  const std::string text = to_string(patterns);
  EXPECT_NE(text.find("3 allocations, 1 distinct sizes"), std::string::npos) << text;
  EXPECT_NE(text.find("1000 B): 3"), std::string::npos) << text;
}

}  // namespace
}  // namespace npumem
