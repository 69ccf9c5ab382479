#include "json_text.h"

#include <algorithm>
#include <optional>
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

// Finds the first key given twice in one object, in a pass of its own: the parser keeps
// the last, and `{"layers": [...], "layers": []}` read as an empty model. The DOM
// parser's callback form did this once, but it scans the enclosing array at every
// object's end, quadratic in an array of objects (a 500,000-entry history read in 52 s).
class RepeatedKeyCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> repeated;  // the key, once found

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (keys_.back().insert(key).second) return true;
    repeated = key;
    return false;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  // The parse that builds the document reports it, at its line.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  std::vector<std::unordered_set<std::string>> keys_;
};

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
  RepeatedKeyCheck check;
  try {
    nlohmann::json::sax_parse(text, &check);
  } catch (const nlohmann::json::exception&) {
    // The parse below reports it.
  }
  if (check.repeated) {
    throw ParseError(source, line_of_repeated_key(text, *check.repeated),
                     "key " +
                         nlohmann::json(*check.repeated)
                             .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
                         " is given twice in one object");
  }
  try {
    return nlohmann::json::parse(text);
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
