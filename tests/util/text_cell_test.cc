#include "npumem/text_cell.h"

#include <gtest/gtest.h>

namespace npumem {
namespace {

TEST(TextCell, AsciiCountsOneColumnPerByte) {
  EXPECT_EQ(display_width("init"), 4u);
  EXPECT_EQ(pad_right("ab", 5), "ab   ");
  EXPECT_EQ(pad_left("ab", 5), "   ab");
}

TEST(TextCell, ChineseLabelsCountTwoColumnsPerCharacter) {
  EXPECT_EQ(display_width("模型加载"), 8u);  // the seeds' "model loaded"
  EXPECT_EQ(pad_right("初始化", 10), "初始化    ");
  EXPECT_EQ(display_width("é"), 1u);
}

TEST(TextCell, WiderTextIsLeftAlone) {
  EXPECT_EQ(pad_right("abcdef", 3), "abcdef");
  EXPECT_EQ(pad_left("abcdef", 3), "abcdef");
}

}  // namespace
}  // namespace npumem
