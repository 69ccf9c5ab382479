#include "trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

// The ParseError message for `text`, or "" when it parses.
std::string parse_error(std::string_view text) {
  try {
    parse_trace(text, "t.trace");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceTest, ParsesAllocFreeAndComments) {
  const Trace trace = parse_trace("# header\na 7 100\n# iteration 0\na 9 0\nf 7\n", "t.trace");
  ASSERT_EQ(trace.events.size(), 3u);
  EXPECT_EQ(trace.events[0].op, TraceOp::alloc);
  EXPECT_EQ(trace.events[0].index, 0u);
  EXPECT_EQ(trace.events[0].bytes, 100u);
  EXPECT_EQ(trace.events[1].index, 1u);
  EXPECT_EQ(trace.events[1].bytes, 0u);
  EXPECT_EQ(trace.events[2].op, TraceOp::free);
  EXPECT_EQ(trace.events[2].index, 0u);  // the slot of id 7
  EXPECT_EQ(trace.events[2].bytes, 100u);
  EXPECT_EQ(trace.allocations, 2u);
  EXPECT_EQ(trace.frees, 1u);
  EXPECT_EQ(trace.memory_events(), 3u);
  EXPECT_EQ(trace.source, "t.trace");
}

TEST(TraceTest, AcceptsBlankLinesTabsCarriageReturnsAndNoFinalNewline) {
  const Trace trace = parse_trace("\n  a\t1  5\r\n\n   # indented comment\nf 1", "t.trace");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].bytes, 5u);
  EXPECT_EQ(trace.events[1].op, TraceOp::free);
}

// As editors write text: a UTF-8 byte order mark first, or lines ended by a lone CR
// (refused before, "unknown op '\xef\xbb\xbfa'" and "extra fields").
TEST(TraceTest, AcceptsAByteOrderMarkAndLinesEndedByCarriageReturns) {
  const Trace marked = parse_trace(
      "\xef\xbb\xbf"
      "a 1 5\nf 1\n",
      "t.trace");
  ASSERT_EQ(marked.events.size(), 2u);
  const Trace mac = parse_trace("a 0 10\rf 0\ra 1 7\r", "t.trace");
  ASSERT_EQ(mac.events.size(), 3u);
  EXPECT_EQ(mac.events[2].bytes, 7u);
  EXPECT_NE(parse_error("a 0 10\rq 0\r").find("t.trace:2"), std::string::npos)
      << "lines are counted at each CR";
}

TEST(TraceTest, ReusedIdAfterFreeGetsANewSlot) {
  const Trace trace = parse_trace("a 1 10\nf 1\na 1 20\nf 1\n", "t.trace");
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.events[2].index, 1u);
  EXPECT_EQ(trace.events[3].index, 1u);
  EXPECT_EQ(trace.events[3].bytes, 20u);
}

TEST(TraceTest, AnIterationMayCarryAKey) {
  const Trace trace = parse_trace("i 42\ni\n", "t.trace");
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].op, TraceOp::iteration);
  EXPECT_EQ(trace.events[0].index, 1u) << "keyed";
  EXPECT_EQ(trace.events[0].bytes, 42u);
  EXPECT_EQ(trace.events[1].index, 0u) << "not keyed";
  EXPECT_EQ(trace.iterations, 2u);
}

TEST(TraceTest, PoolSwitchesAndIterationMarkersBecomeEvents) {
  const Trace trace = parse_trace("p model_a\na 1 8\ni\np model_b\np model_a\ni\n", "t.trace");
  ASSERT_EQ(trace.pools, (std::vector<std::string>{"model_a", "model_b"}));
  ASSERT_EQ(trace.events.size(), 6u);
  EXPECT_EQ(trace.events[0].op, TraceOp::pool);
  EXPECT_EQ(trace.events[0].index, 0u);
  EXPECT_EQ(trace.events[2].op, TraceOp::iteration);
  EXPECT_EQ(trace.events[3].index, 1u);
  EXPECT_EQ(trace.events[4].index, 0u);
  EXPECT_EQ(trace.iterations, 2u);
  EXPECT_EQ(trace.memory_events(), 1u);
}

TEST(TraceTest, TagLinesBecomeEventsAndAnEmptyTagClears) {
  const Trace trace = parse_trace("t layer.1\na 1 8\nt\nt layer.1\n", "t.trace");
  ASSERT_EQ(trace.tags, (std::vector<std::string>{"layer.1", ""}));
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.events[0].op, TraceOp::tag);
  EXPECT_EQ(trace.events[0].index, 0u);
  EXPECT_EQ(trace.events[2].index, 1u);
  EXPECT_EQ(trace.events[3].index, 0u);
  EXPECT_EQ(parse_error("t a b\n"), "t.trace:1: 't' has extra fields after [<tag>]: 'b'");
}

TEST(TraceTest, StreamLinesCarryTheStream) {
  const Trace trace = parse_trace("s 7\na 1 8\ns 18446744073709551615\n", "t.trace");
  ASSERT_EQ(trace.events.size(), 3u);
  EXPECT_EQ(trace.events[0].op, TraceOp::stream);
  EXPECT_EQ(trace.events[0].bytes, 7u);
  EXPECT_EQ(trace.events[2].bytes, 18446744073709551615u);
  EXPECT_EQ(trace.memory_events(), 1u);
  EXPECT_EQ(parse_error("s\n"), "t.trace:1: 's' is missing fields: expected <stream>");
  EXPECT_EQ(parse_error("s x\n"), "t.trace:1: stream is not a number: 'x'");
}

TEST(TraceTest, PeakLiveBytesFollowsAllocationsAndFrees) {
  const Trace trace = parse_trace("a 1 100\na 2 50\nf 1\na 3 120\na 4 10\nf 2\n", "t.trace");
  EXPECT_EQ(peak_live_bytes(trace), 180u);  // 50 + 120 + 10
  EXPECT_EQ(peak_live_bytes(parse_trace("# nothing\n", "t.trace")), 0u);
}

TEST(TraceTest, ErrorsNameFileLineAndProblem) {
  EXPECT_EQ(parse_error("a 1 10\nx 2\n"),
            "t.trace:2: unknown op 'x' (expected a, f, p, r, i, t, s or a # comment)");
  EXPECT_EQ(parse_error("alloc 1 2\n"),
            "t.trace:1: unknown op 'alloc' (expected a, f, p, r, i, t, s or a # comment)");
  EXPECT_EQ(parse_error("# records\n4096 0 3\n"),
            "t.trace:2: unknown op '4096' (expected a, f, p, r, i, t, s or a # comment); lifetime "
            "records '<bytes> <first_op> <last_op>' are planned (`npumem plan memory RECORDS`), "
            "not replayed");
  // npumem's own JSON (replay --record, a snapshot) given to replay: where to take it.
  EXPECT_NE(parse_error("{\"format\":\"npumem.snapshot\"}\n")
                .find("this is JSON (a snapshot, "
                      "a --record history or a Chrome "
                      "trace, which `npumem viz FILE` "
                      "shows)"),
            std::string::npos);
  EXPECT_EQ(
      parse_error(std::string("\x7f"
                              "ELF\x02\x01 x\n")),
      "t.trace:1: unknown op '\\x7fELF\\x02\\x01' (expected a, f, p, r, i, t, s or a # comment)");
  EXPECT_EQ(parse_error(std::string(50, 'z') + "\n"),
            "t.trace:1: unknown op '" + std::string(40, 'z') +
                "...' (expected a, f, p, r, i, t, s or a # comment)");
}

// A recording writes a pool's quota on its first `p` line; replay makes the pool with it.
// The quota goes in the event that makes the pool.
TEST(TraceTest, APoolLineMayGiveThePoolsQuota) {
  const Trace trace = parse_trace("p a 4096\na 1 8\np b\np a\np a 4096\np default\n", "t.trace");
  EXPECT_EQ(trace.pools, (std::vector<std::string>{"a", "b", "default"}));
  ASSERT_EQ(trace.events.size(), 6u);
  EXPECT_EQ(trace.events[0].bytes, 4096u);
  for (std::size_t i : {2u, 3u, 4u, 5u}) EXPECT_EQ(trace.events[i].bytes, 0u) << i;
  EXPECT_EQ(parse_error("p a 4096\np b\np a 8192\n"),
            "t.trace:3: pool 'a' has quota 8192 here and 4096 on line 1 (an `r` line between "
            "them would make it anew)");
  EXPECT_EQ(parse_error("p default 4096\n"),
            "t.trace:1: the default pool takes no quota (static_size sizes its static arena)");
}

// A served model unloaded (remove_pool) and another loaded under the pool's name.
TEST(TraceTest, ARemovedPoolIsMadeAnewWithItsNewQuota) {
  const Trace trace =
      parse_trace("p a 4096\na 1 8\np default\nf 1\nr a\np a 8192\na 2 8\n", "t.trace");
  ASSERT_EQ(trace.events.size(), 7u);
  EXPECT_EQ(trace.events[4].op, TraceOp::pool_removal);
  EXPECT_EQ(trace.events[4].index, 0u);
  EXPECT_EQ(trace.events[5].op, TraceOp::pool);
  EXPECT_EQ(trace.events[5].bytes, 8192u);
  EXPECT_EQ(trace.pools, (std::vector<std::string>{"a", "default"}));
  EXPECT_EQ(parse_error("p a\na 1 8\np default\nr a\n"),
            "t.trace:4: pool 'a' is removed while 1 of its allocations is live (npumem "
            "refuses that: free them first)");
  EXPECT_NE(
      parse_error("p a\na 1 8\na 2 8\np default\nr a\n").find("2 of its allocations are live"),
      std::string::npos);
  EXPECT_EQ(parse_error("r a\n"), "t.trace:1: pool 'a' is removed, but no `p` line made it");
  EXPECT_EQ(parse_error("p a\nr a\nr a\n"),
            "t.trace:3: pool 'a' is removed, but no `p` line made it since it was last removed");
  EXPECT_EQ(parse_error("r default\n"), "t.trace:1: the default pool cannot be removed");
  EXPECT_EQ(parse_error("r\n"), "t.trace:1: 'r' is missing fields: expected <pool name>");
}

TEST(TraceTest, RejectsControlCharactersInPoolNamesAndTags) {
  EXPECT_EQ(parse_error("p \x1b]0;x\x07\na 1 5\n"),
            "t.trace:1: pool name '\\x1b]0;x\\x07' holds a control character");
  EXPECT_EQ(parse_error("a 1 5\nt a\x1b[2Jb\n"),
            "t.trace:2: tag 'a\\x1b[2Jb' holds a control character");
}

TEST(TraceTest, RejectsMissingFields) {
  EXPECT_EQ(parse_error("a 1\n"), "t.trace:1: 'a' is missing fields: expected <id> <bytes>");
  EXPECT_EQ(parse_error("a\n"), "t.trace:1: 'a' is missing fields: expected <id> <bytes>");
  EXPECT_EQ(parse_error("a 1 2\nf\n"), "t.trace:2: 'f' is missing fields: expected <id>");
  EXPECT_EQ(parse_error("p\n"),
            "t.trace:1: 'p' is missing fields: expected <pool name> [<quota bytes>]");
}

TEST(TraceTest, RejectsExtraFields) {
  EXPECT_EQ(parse_error("a 1 2 3\n"), "t.trace:1: 'a' has extra fields after <id> <bytes>: '3'");
  EXPECT_EQ(parse_error("a 1 2\nf 1 2\n"), "t.trace:2: 'f' has extra fields after <id>: '2'");
  EXPECT_EQ(parse_error("i 3 4\n"), "t.trace:1: 'i' has extra fields after [<key>]: '4'");
  EXPECT_EQ(parse_error("i x\n"), "t.trace:1: key is not a number: 'x'");
  EXPECT_EQ(parse_error("p a 5 b\n"),
            "t.trace:1: 'p' has extra fields after <pool name> [<quota bytes>]: 'b'");
  EXPECT_EQ(parse_error("p a b\n"), "t.trace:1: quota is not a number: 'b'");
}

TEST(TraceTest, RejectsBadNumbers) {
  EXPECT_EQ(parse_error("a x 2\n"), "t.trace:1: id is not a number: 'x'");
  EXPECT_EQ(parse_error("a 1 12k\n"), "t.trace:1: bytes is not a number: '12k'");
  EXPECT_EQ(parse_error("a 1 +5\n"), "t.trace:1: bytes is not a number: '+5'");
  EXPECT_EQ(parse_error("a 1 -5\n"), "t.trace:1: bytes must not be negative: '-5'");
  EXPECT_EQ(parse_error("f -1\n"), "t.trace:1: id must not be negative: '-1'");
  EXPECT_EQ(parse_error("a 1 18446744073709551616\n"),
            "t.trace:1: bytes overflows 64 bits: '18446744073709551616'");
}

TEST(TraceTest, RejectsLiveBytesOverflow) {
  EXPECT_EQ(parse_error("a 1 18446744073709551615\na 2 1\n"),
            "t.trace:2: live bytes overflow 64 bits at id 2");
  EXPECT_EQ(parse_error("a 1 18446744073709551615\nf 1\na 2 1\n"), "");
}

TEST(TraceTest, RejectsDuplicateLiveId) {
  EXPECT_EQ(parse_error("a 1 2\n# c\na 1 3\n"),
            "t.trace:3: id 1 is already live (allocated on line 1)");
}

TEST(TraceTest, RejectsFreeOfUnknownOrFreedId) {
  EXPECT_EQ(parse_error("a 1 2\nf 2\n"), "t.trace:2: free of unknown id 2");
  EXPECT_EQ(parse_error("a 1 2\nf 1\nf 1\n"), "t.trace:3: id 1 is already freed (on line 2)");
}

TEST(TraceTest, ReadTraceReportsTheFileNameInErrors) {
  const auto path = std::filesystem::temp_directory_path() / "npumem_trace_test_bad.trace";
  std::ofstream(path) << "a 1 2\na 2 two\n";
  try {
    read_trace(path.string());
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(std::string(e.what()), path.string() + ":2: bytes is not a number: 'two'");
  }
  std::filesystem::remove(path);
}

TEST(TraceTest, ReadTraceFailsClearlyOnAMissingFile) {
  try {
    read_trace("/nonexistent/dir/x.trace");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot read trace /nonexistent/dir/x.trace: No such file or directory");
  }
}

TEST(TraceTest, ReadTraceRefusesAFileWithNoAllocationOrADirectory) {
  const auto path = std::filesystem::temp_directory_path() / "npumem_trace_test_empty.trace";
  std::ofstream(path) << "# a capture that recorded nothing\ni\n";
  try {
    read_trace(path.string());
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ":2: no allocations (no `a` line) to replay or plan");
  }
  std::filesystem::remove(path);
  // A directory read as an empty file: "no allocations" named the wrong problem.
  const std::string directory = std::filesystem::temp_directory_path().string();
  try {
    read_trace(directory);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read trace " + directory + ": it is a directory");
  }
}

// /dev/zero given as a trace was read until memory ran out: no line break ever came.
TEST(TraceTest, ALineLongerThanAnyTraceHasIsRefusedAsItIsRead) {
  try {
    read_trace("/dev/zero");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 1u);
    EXPECT_NE(std::string(e.what()).find("/dev/zero:1: a line longer than 1048576 bytes: not a "
                                         "trace"),
              std::string::npos)
        << e.what();
  }
  const std::string text = "a 1 2\n# " + std::string(std::size_t{1} << 20, 'x') + "\na 2 3\n";
  try {
    parse_trace(text, "long.trace");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 2u);
  }
}

// Read a piece at a time, lines (and a CRLF, and a byte order mark) that straddle the
// pieces' boundaries read as they do from one string.
TEST(TraceTest, ReadTraceSplitsLinesAcrossItsPieces) {
  const auto path = std::filesystem::temp_directory_path() / "npumem_trace_test_pieces.trace";
  std::string text = "\xef\xbb\xbf# header\r\n";
  std::size_t id = 0;
  while (text.size() < 3 * (std::size_t{1} << 20)) {
    text += "a " + std::to_string(id) + " 512\r\nf " + std::to_string(id) + "\r";
    ++id;
  }
  text += "a " + std::to_string(id) + " 7";  // the last line has no line break
  std::ofstream(path, std::ios::binary) << text;
  const Trace trace = read_trace(path.string());
  const Trace whole = parse_trace(text, path.string());
  EXPECT_EQ(trace.allocations, id + 1);
  EXPECT_EQ(trace.frees, id);
  EXPECT_EQ(trace.events.size(), whole.events.size());
  EXPECT_EQ(trace.events.back().op, TraceOp::alloc);
  std::filesystem::remove(path);
}

TEST(TraceTest, ParsesTheSharedTracesWithTheirSummaryCounts) {
  const std::filesystem::path dir = NPUMEM_SHARED_DIR "/traces";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared traces at " << dir;
  // Events and allocations as ../shared/traces/SUMMARY.md lists them.
  const std::pair<const char*, std::pair<std::size_t, std::size_t>> expected[] = {
      {"resnet50_train", {9914, 5280}},
      {"mobilenet_v2_infer", {15300, 7808}},
      {"vit_b_16_infer", {1362, 758}},
      {"bert_train_dynpad", {63958, 32368}},
  };
  for (const auto& [name, counts] : expected) {
    const Trace trace = read_trace((dir / (std::string(name) + ".trace")).string());
    EXPECT_EQ(trace.memory_events(), counts.first) << name;
    EXPECT_EQ(trace.allocations, counts.second) << name;
  }
}

}  // namespace
}  // namespace npumem::cli
