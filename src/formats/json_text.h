// The CLI's JSON boundary. Documents read from files are bounded in nesting (the
// parser and the code walking its result recurse) and any parser failure becomes
// a ParseError with file:line; documents written replace ill-formed UTF-8 (names
// and tags are arbitrary bytes) instead of throwing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace npumem::cli {

// Arrays and objects nested deeper than this are refused.
inline constexpr std::size_t kMaxJsonDepth = 256;

// Whether the first 4 KiB of `text` hold control bytes no text has (below tab, or
// between carriage return and space): a binary file (an ONNX model) given as JSON.
bool starts_as_binary(std::string_view text);

// Throws ParseError(source, line, problem) on binary data, malformed or too deeply nested
// JSON and numbers out of range (1e400).
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string without_exception_id(const nlohmann::json::exception& e);

// `value` as indented JSON text, ill-formed UTF-8 written as U+FFFD.
std::string json_text(const nlohmann::json& value, int indent = 2);

}  // namespace npumem::cli
