#include "observe/export/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace npumem::observe {
namespace {

TEST(JsonWriter, WritesNestedContainersWithCommas) {
  std::ostringstream out;
  JsonWriter json(out);
  json.begin_object()
      .field("name", "sim:0")
      .field("count", std::uint64_t{3})
      .field("delta", std::int64_t{-2})
      .field("ok", true)
      .key("list")
      .begin_array()
      .value(1)
      .value("two")
      .begin_object()
      .end_object()
      .end_array()
      .end_object();
  EXPECT_EQ(out.str(), R"({"name":"sim:0","count":3,"delta":-2,"ok":true,"list":[1,"two",{}]})");
}

TEST(JsonWriter, EscapesStringsSoAParserReadsThemBack) {
  const std::string tricky = "quote\" backslash\\ newline\n tab\t bell\x07 模型";
  std::ostringstream out;
  JsonWriter(out).begin_object().field("text", tricky).end_object();
  EXPECT_EQ(nlohmann::json::parse(out.str()).at("text").get<std::string>(), tricky);
  EXPECT_EQ(json_quoted("\x01"), "\"\\u0001\"");
}

TEST(JsonWriter, IllFormedUtf8BecomesReplacementCharacters) {
  // Truncated, stray continuation, overlong, surrogate, above U+10FFFF, invalid lead.
  for (const char* bad :
       {"\xe6\xa8", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"}) {
    const std::string text = std::string("pool ") + bad + " end";
    std::ostringstream out;
    JsonWriter(out).begin_object().field("name", text).end_object();
    const std::string parsed = nlohmann::json::parse(out.str()).at("name").get<std::string>();
    EXPECT_EQ(parsed.substr(0, 5), "pool ");
    EXPECT_NE(parsed.find("\xef\xbf\xbd"), std::string::npos) << out.str();
    EXPECT_EQ(parsed.substr(parsed.size() - 4), " end");
  }
  EXPECT_EQ(json_quoted("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");  // well-formed: kept
}

TEST(JsonWriter, DoublesRoundTripAndNonFiniteBecomesNull) {
  std::ostringstream out;
  JsonWriter(out).begin_array().value(0.1).value(12345.678).value(std::nan("")).end_array();
  EXPECT_EQ(out.str(), "[0.1,12345.678,null]");
}

}  // namespace
}  // namespace npumem::observe
