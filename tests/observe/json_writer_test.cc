#include "observe/json_writer.h"

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

TEST(JsonWriter, DoublesRoundTripAndNonFiniteBecomesNull) {
  std::ostringstream out;
  JsonWriter(out).begin_array().value(0.1).value(12345.678).value(std::nan("")).end_array();
  EXPECT_EQ(out.str(), "[0.1,12345.678,null]");
}

}  // namespace
}  // namespace npumem::observe
