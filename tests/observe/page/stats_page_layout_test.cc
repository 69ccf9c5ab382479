#include "observe/page/stats_page_layout.h"

#include <gtest/gtest.h>

namespace npumem::observe {
namespace {

TEST(StatsPageLayout, TextRoundTripsAndTruncates) {
  PageText text{};
  store_text(text, "sim:0");
  EXPECT_EQ(load_text(text), "sim:0");
  store_text(text, std::string(100, 'x'));
  EXPECT_EQ(load_text(text), std::string(kPageTextBytes - 1, 'x'));
  store_text(text, "");
  EXPECT_EQ(load_text(text), "");
}

TEST(StatsPageLayout, FitsInOnePageOrTwo) {
  // Small enough that every process can afford one; readers map it whole.
  EXPECT_LE(sizeof(StatsPageLayout), 8192u);
}

}  // namespace
}  // namespace npumem::observe
