// A small streaming JSON writer: the core library has no JSON dependency, and its
// exports (snapshots, Chrome traces) are written once, front to back.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace npumem::observe {

// `text` as a JSON string literal, quotes included.
std::string json_quoted(std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The next value belongs to this key (inside an object).
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(double number);  // finite numbers; null otherwise
  JsonWriter& value(bool flag);

  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

 private:
  void before_value();

  std::ostream& out_;
  std::vector<bool> has_items_;  // per open container: whether a comma is due
  bool after_key_ = false;
};

}  // namespace npumem::observe
