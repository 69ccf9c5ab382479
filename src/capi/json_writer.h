// A small streaming JSON writer: the core library may not depend on a JSON library,
// and the C ABI's snapshot needs only objects, arrays, strings, integers and booleans.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace npumem::capi {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The name of the next member of the enclosing object.
  JsonWriter& key(std::string_view name);
  // Text must be UTF-8; invalid bytes are written as U+FFFD.
  JsonWriter& string(std::string_view text);
  JsonWriter& number(std::int64_t value);
  JsonWriter& number(std::uint64_t value);
  JsonWriter& boolean(bool value);

  const std::string& text() const { return out_; }

 private:
  // Writes the ',' that precedes every element of a container but its first.
  void begin_value();
  void open(char bracket);
  void close(char bracket);
  void quoted(std::string_view text);

  std::string out_;
  std::vector<bool> container_has_elements_;
  bool after_key_ = false;
};

}  // namespace npumem::capi
