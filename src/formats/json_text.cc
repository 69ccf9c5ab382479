#include "json_text.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "npumem/errors.h"

namespace npumem::cli {
namespace {

// The 1-based line of a byte offset, for error messages.
std::size_t line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// Refuses nesting beyond kMaxJsonDepth before the parser sees the text; brackets
// inside strings do not count.
void check_depth(std::string_view text, const std::string& source) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw ParseError(source, line_of(text, i),
                         "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

// The line of `key`'s second appearance as a key, or of the first when it is written
// with escapes the text does not spell alike (the parser gives no position).
std::size_t line_of_repeated_key(std::string_view text, const std::string& key) {
  const std::string quoted = nlohmann::json(key).dump();
  const std::size_t first = text.find(quoted);
  const std::size_t second =
      first == std::string_view::npos ? first : text.find(quoted, first + quoted.size());
  return line_of(text, second != std::string_view::npos  ? second
                       : first != std::string_view::npos ? first
                                                         : 0);
}

}  // namespace

bool starts_as_binary(std::string_view text) {
  const std::string_view head = text.substr(0, 4096);
  return std::any_of(head.begin(), head.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < '\t' || (byte > '\r' && byte < ' ');
  });
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  // Before the depth check: an ONNX model's bytes read as brackets 11,800 lines deep.
  if (starts_as_binary(text)) throw ParseError(source, 1, "binary data, not JSON");
  check_depth(text, source);
  // A key given twice in one object: the parser keeps the last, and `{"layers": [...],
  // "layers": []}` read as an empty model.
  std::vector<std::unordered_set<std::string>> keys;
  const auto no_repeated_keys = [&](int, nlohmann::json::parse_event_t event,
                                    nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      keys.emplace_back();
    } else if (event == Event::object_end) {
      keys.pop_back();
    } else if (event == Event::key && !keys.back().insert(parsed.get<std::string>()).second) {
      const std::string key = parsed.get<std::string>();
      throw ParseError(
          source, line_of_repeated_key(text, key),
          "key " +
              nlohmann::json(key).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
              " is given twice in one object");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, no_repeated_keys);
  } catch (const nlohmann::json::parse_error& e) {
    // byte is 1-based: the position just after the offending character.
    throw ParseError(source, line_of(text, e.byte == 0 ? 0 : e.byte - 1),
                     "malformed JSON: " + without_exception_id(e));
  } catch (const nlohmann::json::exception& e) {
    // out_of_range (a number such as 1e400) carries no position, only the token.
    const std::string message = without_exception_id(e);
    const std::size_t open = message.find('\'');
    const std::size_t close = message.rfind('\'');
    std::size_t at = 0;
    if (open != std::string::npos && close > open + 1) {
      at = text.find(message.substr(open + 1, close - open - 1));
    }
    throw ParseError(source, line_of(text, at == std::string_view::npos ? 0 : at), message);
  }
}

std::string without_exception_id(const nlohmann::json::exception& e) {
  const std::string text = e.what();
  const std::size_t end = text.find("] ");
  return text.starts_with("[json.exception.") && end != std::string::npos ? text.substr(end + 2)
                                                                          : text;
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace npumem::cli
