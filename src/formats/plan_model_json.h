// Model files for `npumem plan shard|recompute`: a JSON object with the layers of a model
// run as a chain (see docs/PLANNING.md; tools/scripts/extract_model.py writes them).
//
//   {"model": "resnet18", "input_bytes": 602112,
//    "layers": [{"name": "conv1", "weight_bytes": 37632, "activation_bytes": 3211264,
//                "compute_ms": 0.41}, ...]}
//
// "model", "input_bytes" and "compute_ms" are optional.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/plan.h"

namespace npumem::cli {

struct ModelFile {
  std::string name;
  std::uint64_t input_bytes = 0;
  std::vector<plan::Layer> layers;
};

// Throws ParseError(source, line, problem) on malformed JSON, Error naming the source and
// the JSON path (e.g. layers[3].weight_bytes) on a missing, unknown or ill-typed field.
ModelFile parse_model_json(std::string_view text, const std::string& source);

// Reads and parses a model file. Throws Error when it cannot be read.
ModelFile read_model_json(const std::string& path);

}  // namespace npumem::cli
