#include "capi/json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace npumem::capi {
namespace {

std::string json_text_of(std::string_view text) {
  JsonWriter json;
  json.string(text);
  return json.text();
}

TEST(JsonWriter, NestedContainersGetCommasOnlyBetweenElements) {
  JsonWriter json;
  json.begin_object();
  json.key("a").begin_array().number(std::int64_t{1}).number(std::int64_t{2}).end_array();
  json.key("b").begin_object().end_object();
  json.key("c").begin_array().begin_object().key("d").boolean(true).end_object().end_array();
  json.key("e").boolean(false);
  json.end_object();
  EXPECT_EQ(json.text(), R"({"a":[1,2],"b":{},"c":[{"d":true}],"e":false})");
}

TEST(JsonWriter, IntegersKeepTheirFullRange) {
  JsonWriter json;
  json.begin_array()
      .number(std::numeric_limits<std::int64_t>::min())
      .number(std::numeric_limits<std::uint64_t>::max())
      .end_array();
  const auto parsed = nlohmann::json::parse(json.text());
  EXPECT_EQ(parsed[0].get<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parsed[1].get<std::uint64_t>(), std::numeric_limits<std::uint64_t>::max());
}

TEST(JsonWriter, QuotesBackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(json_text_of("say \"hi\"\\"), R"("say \"hi\"\\")");
  EXPECT_EQ(json_text_of("a\nb\tc\rd\be\ff"), R"("a\nb\tc\rd\be\ff")");
  EXPECT_EQ(json_text_of(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_text_of(std::string("\0", 1)), R"("\u0000")");
}

TEST(JsonWriter, ValidUtf8IsKept) {
  const std::string text = "layer·ß·€·\xF0\x9F\x98\x80";
  EXPECT_EQ(json_text_of(text), "\"" + text + "\"");
  EXPECT_EQ(nlohmann::json::parse(json_text_of(text)).get<std::string>(), text);
}

TEST(JsonWriter, InvalidUtf8BecomesTheReplacementCharacter) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(json_text_of("a\xFF"
                         "b"),
            "\"a" + replacement + "b\"");
  EXPECT_EQ(json_text_of("\xC3"), "\"" + replacement + "\"") << "truncated sequence";
  EXPECT_EQ(json_text_of("\xC0\xAF"), "\"" + replacement + replacement + "\"") << "overlong";
  EXPECT_EQ(json_text_of("\xED\xA0\x80"), "\"" + replacement + replacement + replacement + "\"")
      << "surrogate";
  for (const char* bad : {"\xFF", "\xC3", "\xE2\x82", "\xF4\x90\x80\x80"}) {
    EXPECT_NO_THROW(nlohmann::json::parse(json_text_of(bad))) << json_text_of(bad);
  }
}

}  // namespace
}  // namespace npumem::capi
