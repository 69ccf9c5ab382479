#include "util/untrusted_text.h"

#include <gtest/gtest.h>

namespace npumem::util {
namespace {

TEST(UntrustedText, PrintableTextIsKept) {
  EXPECT_EQ(escaped_for_display("model_a"), "model_a");
  EXPECT_EQ(escaped_for_display("模型"), "模型");
}

TEST(UntrustedText, ControlsBackslashAndIllFormedBytesAreEscaped) {
  EXPECT_EQ(escaped_for_display("a\nb"), "a\\x0ab");
  EXPECT_EQ(escaped_for_display("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(escaped_for_display("a\\b"), "a\\x5cb");
  EXPECT_EQ(escaped_for_display("\x7f"), "\\x7f");
  EXPECT_EQ(escaped_for_display("\xc2\x9b"), "\\xc2\\x9b");  // C1 CSI
  EXPECT_EQ(escaped_for_display("\xff"), "\\xff");
  EXPECT_EQ(escaped_for_display("\xe6\xa8"), "\\xe6\\xa8");  // a cut sequence
}

TEST(UntrustedText, Utf8LengthRefusesOverlongsAndSurrogates) {
  EXPECT_EQ(utf8_length("a", 0), 1u);
  EXPECT_EQ(utf8_length("\xc3\xa9", 0), 2u);
  EXPECT_EQ(utf8_length("\xc0\xaf", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_length("\xed\xa0\x80", 0), 0u);      // a surrogate
  EXPECT_EQ(utf8_length("\xf4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(utf8_length("\xf0\x9f\x98\x80", 0), 4u);
}

}  // namespace
}  // namespace npumem::util
