#include "progress.h"

#include <gtest/gtest.h>

namespace npumem::cli {
namespace {

TEST(ProgressTest, RendersTheFilledFractionAndPercent) {
  EXPECT_EQ(render_progress("replay", 0, 100, 10), "replay [----------]   0%");
  EXPECT_EQ(render_progress("replay", 50, 100, 10), "replay [#####-----]  50%");
  EXPECT_EQ(render_progress("replay", 100, 100, 10), "replay [##########] 100%");
}

TEST(ProgressTest, ClampsDoneAndTreatsAnEmptyTotalAsComplete) {
  EXPECT_EQ(render_progress("x", 7, 5, 4), "x [####] 100%");
  EXPECT_EQ(render_progress("x", 0, 0, 4), "x [####] 100%");
}

}  // namespace
}  // namespace npumem::cli
