#include "capi/json_writer.h"

#include <array>

namespace npumem::capi {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Length of the valid UTF-8 sequence starting text, or 0 when it is not valid.
std::size_t utf8_sequence_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char min_second = 0x80;
  unsigned char max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < min_second || byte(1) > max_second) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

void append_escaped_control(std::string& out, unsigned char c) {
  switch (c) {
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default: {
      constexpr std::array<char, 16> kHex = {'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
}

}  // namespace

JsonWriter& JsonWriter::begin_object() {
  open('{');
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  open('[');
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  begin_value();
  quoted(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view text) {
  begin_value();
  quoted(text);
  return *this;
}

JsonWriter& JsonWriter::number(std::int64_t value) {
  begin_value();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::number(std::uint64_t value) {
  begin_value();
  out_ += std::to_string(value);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool value) {
  begin_value();
  out_ += value ? "true" : "false";
  return *this;
}

void JsonWriter::begin_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (container_has_elements_.empty()) return;
  if (container_has_elements_.back()) out_ += ',';
  container_has_elements_.back() = true;
}

void JsonWriter::open(char bracket) {
  begin_value();
  out_ += bracket;
  container_has_elements_.push_back(false);
}

void JsonWriter::close(char bracket) {
  container_has_elements_.pop_back();
  out_ += bracket;
}

void JsonWriter::quoted(std::string_view text) {
  out_ += '"';
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    std::size_t consumed = 1;
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += static_cast<char>(c);
    } else if (c < 0x20) {
      append_escaped_control(out_, c);
    } else if (c < 0x80) {
      out_ += static_cast<char>(c);
    } else if (const std::size_t length = utf8_sequence_length(text); length != 0) {
      out_.append(text.substr(0, length));
      consumed = length;
    } else {
      out_ += kReplacement;
    }
    text.remove_prefix(consumed);
  }
  out_ += '"';
}

}  // namespace npumem::capi
