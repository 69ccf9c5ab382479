#include "plan/memory/range_add_max.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace npumem::plan {
namespace {

TEST(RangeAddMaxTest, AddsAndTakesMaximaOverRanges) {
  RangeAddMax values;
  values.assign(std::vector<std::uint64_t>{5, 1, 7, 3, 2});
  EXPECT_EQ(values.max(0, 4), 7u);
  EXPECT_EQ(values.max(3, 4), 3u);
  values.add(3, 4, 10);  // 5 1 7 13 12
  EXPECT_EQ(values.max(0, 2), 7u);
  EXPECT_EQ(values.max(4, 4), 12u);
  EXPECT_EQ(values.max(0, 4), 13u);
  values.add(0, 1, 20);  // 25 21 7 13 12
  EXPECT_EQ(values.max(1, 3), 21u);
  EXPECT_EQ(values.max(2, 2), 7u);
}

TEST(RangeAddMaxTest, MatchesAPlainArrayUnderRandomOperations) {
  std::mt19937_64 random(7);
  for (std::size_t size : {1u, 2u, 3u, 17u, 64u, 100u}) {
    std::vector<std::uint64_t> plain(size);
    for (std::uint64_t& value : plain) value = random() % 1000;
    RangeAddMax values;
    values.assign(plain);
    for (int step = 0; step < 2000; ++step) {
      std::size_t first = random() % size;
      std::size_t last = random() % size;
      if (first > last) std::swap(first, last);
      if (random() % 2 == 0) {
        const std::uint64_t amount = random() % 100;
        values.add(first, last, amount);
        for (std::size_t i = first; i <= last; ++i) plain[i] += amount;
      } else {
        const std::uint64_t expected =
            *std::max_element(plain.begin() + static_cast<std::ptrdiff_t>(first),
                              plain.begin() + static_cast<std::ptrdiff_t>(last) + 1);
        ASSERT_EQ(values.max(first, last), expected) << "size " << size << " step " << step;
      }
    }
  }
}

TEST(RangeAddMaxTest, SumsSaturateInsteadOfWrapping) {
  RangeAddMax values;
  values.assign(std::vector<std::uint64_t>{kNoFit - 5, 0});
  values.add(0, 1, 10);
  EXPECT_EQ(values.max(0, 0), kNoFit);
  EXPECT_EQ(values.max(1, 1), 10u);
}

}  // namespace
}  // namespace npumem::plan
