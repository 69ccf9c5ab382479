#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "npumem/errors.h"
#include "npumem/plan.h"

namespace npumem::plan {
namespace {

// The ParseError message for `text`, or "" when it parses.
std::string parse_error(std::string_view text) {
  try {
    parse_lifetime_records(text, "m.records");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(LifetimeRecordsTest, ParsesRecordsSkippingCommentsAndBlankLines) {
  const auto tensors = parse_lifetime_records("# header\n100 0 2\n\n  # note\n7 3 3\n", "m");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].bytes, 100u);
  EXPECT_EQ(tensors[0].first_op, 0u);
  EXPECT_EQ(tensors[0].last_op, 2u);
  EXPECT_EQ(tensors[1].bytes, 7u);
  EXPECT_EQ(tensors[1].first_op, 3u);
  EXPECT_EQ(tensors[1].last_op, 3u);
}

TEST(LifetimeRecordsTest, AcceptsTabsCarriageReturnsAndNoFinalNewline) {
  const auto tensors = parse_lifetime_records("1\t2  3\r\n9223372036854775807 0 0", "m");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].last_op, 3u);
  EXPECT_EQ(tensors[1].bytes, 9223372036854775807u);
}

TEST(LifetimeRecordsTest, EmptyTextHasNoTensors) {
  EXPECT_TRUE(parse_lifetime_records("", "m").empty());
  EXPECT_TRUE(parse_lifetime_records("# only a comment\n\n", "m").empty());
}

TEST(LifetimeRecordsTest, ErrorsNameTheFileLineAndProblem) {
  EXPECT_EQ(parse_error("1 0 0\n-5 1 2\n"), "m.records:2: bytes is negative: '-5'");
  EXPECT_EQ(parse_error("1 0 0\n\n5x 1 2\n"),
            "m.records:3: bytes is not a non-negative integer: '5x'");
  EXPECT_EQ(parse_error("5 4 2\n"), "m.records:1: last_op 2 is before first_op 4");
  EXPECT_EQ(parse_error("5 1\n"),
            "m.records:1: expected 3 fields '<bytes> <first_op> <last_op>', found 2");
  EXPECT_EQ(parse_error("5 1 2 3\n"),
            "m.records:1: expected 3 fields '<bytes> <first_op> <last_op>', found more");
  EXPECT_EQ(parse_error("5 1 18446744073709551616\n"),
            "m.records:1: last_op '18446744073709551616' exceeds 2^64-1");
  EXPECT_EQ(parse_error("5 -1 2\n"), "m.records:1: first_op is negative: '-1'");
  EXPECT_EQ(parse_error("5 1.5 2\n"), "m.records:1: first_op is not a non-negative integer: '1.5'");
  EXPECT_EQ(parse_error("+5 1 2\n"), "m.records:1: bytes is not a non-negative integer: '+5'");
  EXPECT_EQ(parse_error("# a trace\na 0 4096\nf 0\n"),
            "m.records:2: 'a' starts an allocation trace's line, not a lifetime record "
            "'<bytes> <first_op> <last_op>' (plan a trace with `plan memory --trace`)");
  // An ONNX model (protobuf) without --onnx: it read as a line of 1 field.
  EXPECT_EQ(parse_error(std::string("\x08\x07\x12\x07pytorch\x1a\x04", 12) + "2.0\n"),
            "m.records:1: binary data, not lifetime records '<bytes> <first_op> <last_op>' (an "
            "ONNX model? plan it with `npumem plan memory --onnx m.records`)");
}

// Plans sum sizes: past 2^63 bytes in all, their figures saturated and were shown as
// values ("16.0 EiB").
TEST(LifetimeRecordsTest, RefusesSizesSummingPastTwoToThe63) {
  EXPECT_EQ(parse_error("4611686018427387904 0 1\n4611686018427387904 2 3\n"), "");
  EXPECT_EQ(parse_error("4611686018427387904 0 1\n4611686018427387904 2 3\n1 4 4\n"),
            "m.records:3: the tensors' bytes sum past 2^63 (8.00 EiB), more than any plan "
            "can count");
  EXPECT_EQ(parse_error("18446744073709551615 0 0\n"),
            "m.records:1: the tensors' bytes sum past 2^63 (8.00 EiB), more than any plan "
            "can count");
}

TEST(LifetimeRecordsTest, ParseErrorCarriesTheLine) {
  try {
    parse_lifetime_records("1 0 0\n2 0 0\n3 2 1\n", "m.records");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3u);
  }
}

TEST(LifetimeRecordsTest, ReadsEverySharedRecordFile) {
  std::ifstream in(std::string(NPUMEM_SHARED_DIR) + "/records/resnet18.records");
  if (!in) GTEST_SKIP() << "no shared records";
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(parse_lifetime_records(text.str(), "resnet18.records").size(), 51u);
}

}  // namespace
}  // namespace npumem::plan
