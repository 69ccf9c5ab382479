#include "plan_model_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "input_file.h"
#include "json_text.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

using nlohmann::json;

constexpr const char* kModelKeys[] = {"model", "input_bytes", "layers"};
constexpr const char* kLayerKeys[] = {"name", "weight_bytes", "activation_bytes", "compute_ms"};
// The most bytes a model's input, weights and activations may hold together.
constexpr std::uint64_t kMaxModelBytes = std::uint64_t{1} << 63;

// Errors name the file and where in the document the problem is.
class ModelReader {
 public:
  explicit ModelReader(const std::string& source) : source_(source) {}

  ModelFile read(const json& document) const {
    if (!document.is_object()) fail("", "must be a JSON object with a \"layers\" array");
    check_keys(document, kModelKeys, "");
    ModelFile model;
    if (document.contains("model")) model.name = string_field(document, "model", "");
    if (document.contains("input_bytes")) {
      model.input_bytes = bytes_field(document, "input_bytes", "");
      if (model.input_bytes > kMaxModelBytes) {
        fail("input_bytes",
             "is past 2^63 (" + format_bytes(kMaxModelBytes) + "), more than any plan can count");
      }
    }
    if (!document.contains("layers") || !document["layers"].is_array()) {
      fail("layers", "must be an array of layers");
    }
    const json& layers = document["layers"];
    if (layers.empty()) fail("layers", "is empty: a model needs at least one layer");
    // Plans sum the model's bytes and times: the sums must stay exact and finite.
    std::uint64_t bytes = model.input_bytes;
    double seconds = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const std::string where = "layers[" + std::to_string(i) + "]";
      const plan::Layer& layer = model.layers.emplace_back(read_layer(layers[i], where));
      if (layer.weight_bytes > kMaxModelBytes - bytes ||
          layer.activation_bytes > kMaxModelBytes - bytes - layer.weight_bytes) {
        fail(where, "brings the model's bytes past 2^63 (" + format_bytes(kMaxModelBytes) +
                        "), more than any plan can count");
      }
      bytes += layer.weight_bytes + layer.activation_bytes;
      seconds += layer.compute_seconds.value_or(0.0);
      if (!std::isfinite(seconds * 1000.0)) {
        fail(where + ".compute_ms", "brings the model's compute time past what a double holds");
      }
    }
    return model;
  }

 private:
  plan::Layer read_layer(const json& item, const std::string& where) const {
    if (!item.is_object()) fail(where, "must be an object");
    check_keys(item, kLayerKeys, where);
    plan::Layer layer;
    layer.name = string_field(item, "name", where);
    layer.weight_bytes = bytes_field(item, "weight_bytes", where);
    layer.activation_bytes = bytes_field(item, "activation_bytes", where);
    if (item.contains("compute_ms")) {
      const json& value = item["compute_ms"];
      if (!value.is_number() || !(value.get<double>() >= 0) ||
          !std::isfinite(value.get<double>())) {
        fail(where + ".compute_ms", "must be a number >= 0, got " + json_text(value, -1));
      }
      layer.compute_seconds = value.get<double>() / 1000.0;
    }
    return layer;
  }

  template <std::size_t N>
  void check_keys(const json& object, const char* const (&known)[N],
                  const std::string& where) const {
    for (const auto& item : object.items()) {
      const std::string& key = item.key();
      if (std::find_if(std::begin(known), std::end(known),
                       [&](const char* name) { return key == name; }) == std::end(known)) {
        std::string expected;
        for (const char* name : known) expected += std::string(expected.empty() ? "" : ", ") + name;
        fail(join(where, key), "unknown key (expected " + expected + ")");
      }
    }
  }

  std::string string_field(const json& object, const char* key, const std::string& where) const {
    if (!object.contains(key) || !object[key].is_string())
      fail(join(where, key), "must be a string");
    return object[key].get<std::string>();
  }

  std::uint64_t bytes_field(const json& object, const char* key, const std::string& where) const {
    if (!object.contains(key)) fail(join(where, key), "is missing");
    const json& value = object[key];
    if (!value.is_number_unsigned()) {
      fail(join(where, key), "must be a non-negative integer, got " + json_text(value, -1));
    }
    return value.get<std::uint64_t>();
  }

  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }

  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw Error(source_ + ": " + (where.empty() ? "the document" : where) + " " + problem);
  }

  const std::string& source_;
};

}  // namespace

ModelFile parse_model_json(std::string_view text, const std::string& source) {
  if (starts_as_binary(text)) {
    throw ParseError(source, 1,
                     "binary data, not a model description in JSON (an ONNX model? `npumem "
                     "plan memory --onnx` reads those; plan shard and plan recompute read the "
                     "JSON of docs/PLANNING.md, which npumem-extract-model (tools/scripts/extract_model.py) writes)");
  }
  return ModelReader(source).read(parse_json_text(text, source));
}

ModelFile read_model_json(const std::string& path) {
  return parse_model_json(read_input_file(path, "model file"), path);
}

}  // namespace npumem::cli
