#include "plan_model_json.h"

#include <gtest/gtest.h>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

// The message of the npumem::Error parsing `text` throws, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_model_json(text, "m.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PlanModelJsonTest, ReadsAModel) {
  const ModelFile model = parse_model_json(R"({"model": "tiny", "input_bytes": 12,
      "layers": [{"name": "a", "weight_bytes": 100, "activation_bytes": 8, "compute_ms": 1.5},
                 {"name": "b", "weight_bytes": 0, "activation_bytes": 4}]})",
                                           "m.json");
  EXPECT_EQ(model.name, "tiny");
  EXPECT_EQ(model.input_bytes, 12u);
  ASSERT_EQ(model.layers.size(), 2u);
  EXPECT_EQ(model.layers[0].name, "a");
  EXPECT_EQ(model.layers[0].weight_bytes, 100u);
  EXPECT_EQ(model.layers[0].activation_bytes, 8u);
  EXPECT_DOUBLE_EQ(model.layers[0].compute_seconds.value(), 0.0015);
  EXPECT_FALSE(model.layers[1].compute_seconds.has_value());
}

TEST(PlanModelJsonTest, OptionalFieldsMayBeMissing) {
  const ModelFile model = parse_model_json(
      R"({"layers": [{"name": "a", "weight_bytes": 1, "activation_bytes": 2}]})", "m.json");
  EXPECT_EQ(model.name, "");
  EXPECT_EQ(model.input_bytes, 0u);
  ASSERT_EQ(model.layers.size(), 1u);
  EXPECT_FALSE(model.layers[0].compute_seconds.has_value());
  // No layer at all is a mistake (another file, a truncated export), not a model that
  // needs nothing: `plan shard` and `plan recompute` answered with an empty plan.
  EXPECT_EQ(error_of(R"({"layers": []})"),
            "m.json: layers is empty: a model needs at least one layer");
}

TEST(PlanModelJsonTest, MalformedJsonNamesTheLine) {
  try {
    parse_model_json("{\n  \"layers\": [\n    {\"name\": \"a\",}\n  ]\n}", "m.json");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(std::string(e.what()).rfind("m.json:3: malformed JSON", 0), 0u) << e.what();
  }
}

// The parser keeps a key's last value: a model's layers given twice read as no layers.
// An ONNX model given to plan shard or plan recompute was refused as JSON nested too
// deep at its 11,800th line.
TEST(PlanModelJsonTest, BinaryDataIsRefusedAsSuch) {
  const std::string onnx_like = "\x08\x07\x12\x07pytorch\x1a\x04[[[[";
  try {
    parse_model_json(onnx_like, "r18.onnx");
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("r18.onnx:1: binary data, not a model description in "
                                         "JSON (an ONNX model? `npumem plan memory --onnx`"),
              std::string::npos)
        << e.what();
  }
}

TEST(PlanModelJsonTest, AKeyGivenTwiceInOneObjectIsRefused) {
  try {
    parse_model_json("{\n  \"layers\": [{\"name\": \"a\"}],\n  \"layers\": []\n}", "m.json");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()), "m.json:3: key \"layers\" is given twice in one object");
  }
  // The same key in two objects is no repeat.
  EXPECT_EQ(error_of(R"({"layers": [{"name": "a"}, {"name": "b"}], "x": {"layers": 1}})")
                .find("given twice"),
            std::string::npos);
}

TEST(PlanModelJsonTest, SchemaErrorsNameTheField) {
  EXPECT_EQ(error_of("[]"), "m.json: the document must be a JSON object with a \"layers\" array");
  EXPECT_EQ(error_of("{}"), "m.json: layers must be an array of layers");
  EXPECT_EQ(error_of(R"({"layers": [{"name": "a", "weight_bytes": -5, "activation_bytes": 1}]})"),
            "m.json: layers[0].weight_bytes must be a non-negative integer, got -5");
  EXPECT_EQ(error_of(R"({"layers": [{"name": "a", "weight_bytes": 1}]})"),
            "m.json: layers[0].activation_bytes is missing");
  EXPECT_EQ(error_of(R"({"layers": [{"weight_bytes": 1, "activation_bytes": 1}]})"),
            "m.json: layers[0].name must be a string");
  EXPECT_EQ(error_of(R"({"layers": [{"name": "a", "weight_bytes": 1, "activation_bytes": 1,
                                      "compute_ms": -2}]})"),
            "m.json: layers[0].compute_ms must be a number >= 0, got -2");
  EXPECT_EQ(error_of(R"({"layers": [], "layerz": 1})"),
            "m.json: layerz unknown key (expected model, input_bytes, layers)");
  EXPECT_EQ(error_of(R"({"layers": [{"name": "a", "weights": 1, "weight_bytes": 1,
                               "activation_bytes": 1}]})"),
            "m.json: layers[0].weights unknown key (expected name, weight_bytes, activation_bytes, "
            "compute_ms)");
  EXPECT_EQ(error_of(R"({"layers": [], "input_bytes": 1.5})"),
            "m.json: input_bytes must be a non-negative integer, got 1.5");
}

// Plans sum a model's bytes and times: sums past what they are counted in were shown as
// figures ("needs 16.0 EiB", "total inf ms").
TEST(PlanModelJsonTest, RefusesTotalsPastWhatAPlanCounts) {
  EXPECT_EQ(error_of(R"({"input_bytes": 4611686018427387904, "layers": [
      {"name": "a", "weight_bytes": 4611686018427387904, "activation_bytes": 0},
      {"name": "b", "weight_bytes": 0, "activation_bytes": 1}]})"),
            "m.json: layers[1] brings the model's bytes past 2^63 (8.00 EiB), more than any "
            "plan can count");
  EXPECT_EQ(error_of(R"({"layers": [
      {"name": "a", "weight_bytes": 1, "activation_bytes": 1, "compute_ms": 1e308},
      {"name": "b", "weight_bytes": 1, "activation_bytes": 1, "compute_ms": 1e308}]})"),
            "m.json: layers[1].compute_ms brings the model's compute time past what a double "
            "holds");
}

TEST(PlanModelJsonTest, UnreadableFileIsAnError) {
  EXPECT_THROW(read_model_json("/nonexistent/model.json"), Error);
}

}  // namespace
}  // namespace npumem::cli
