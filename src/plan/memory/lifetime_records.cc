// Parsing of tensor lifetime records (`<bytes> <first_op> <last_op>` per line).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "npumem/errors.h"
#include "npumem/plan.h"
#include "npumem/units.h"

namespace npumem::plan {
namespace {

constexpr std::size_t kFields = 3;
// The most bytes all records may hold together.
constexpr std::uint64_t kMaxTotalBytes = std::uint64_t{1} << 63;
// Adds `bytes` to `total` unless the sum would pass 2^63: sums of sizes (the naive
// total, a plan's bounds) then stay exact, with room for alignment.
bool add_within_limit(std::uint64_t& total, std::uint64_t bytes) {
  if (bytes > kMaxTotalBytes - total) return false;
  total += bytes;
  return true;
}

std::string past_the_sum() {
  return "the tensors' bytes sum past 2^63 (" + format_bytes(kMaxTotalBytes) +
         "), more than any plan can count";
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

// The first field of a trace's lines (docs/TRACE_FORMAT.md): a file given in the
// wrong place is named as what it is.
bool is_trace_op(std::string_view field) {
  return field == "a" || field == "f" || field == "p" || field == "i" || field == "t" ||
         field == "s";
}

// Splits a line into up to kFields + 1 fields (one more than allowed, to see extras).
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (fields.size() <= kFields) {
    while (pos < line.size() && is_blank(line[pos])) ++pos;
    if (pos == line.size()) break;
    const std::size_t start = pos;
    while (pos < line.size() && !is_blank(line[pos])) ++pos;
    fields.push_back(line.substr(start, pos - start));
  }
  return fields;
}

class RecordParser {
 public:
  RecordParser(const std::string& source, std::size_t line) : source_(source), line_(line) {}

  TensorLifetime parse(std::string_view text) const {
    const std::vector<std::string_view> fields = split_fields(text);
    if (is_trace_op(fields.front())) {
      fail("'" + std::string(fields.front()) +
           "' starts an allocation trace's line, not a lifetime record "
           "'<bytes> <first_op> <last_op>' (plan a trace with `plan memory --trace`)");
    }
    if (fields.size() != kFields) {
      fail("expected 3 fields '<bytes> <first_op> <last_op>', found " +
           std::string(fields.size() > kFields ? "more" : std::to_string(fields.size())));
    }
    TensorLifetime tensor;
    tensor.bytes = number(fields[0], "bytes");
    tensor.first_op = number(fields[1], "first_op");
    tensor.last_op = number(fields[2], "last_op");
    if (tensor.last_op < tensor.first_op) {
      fail("last_op " + std::to_string(tensor.last_op) + " is before first_op " +
           std::to_string(tensor.first_op));
    }
    return tensor;
  }

 private:
  std::uint64_t number(std::string_view field, const std::string& what) const {
    if (field.front() == '-') fail(what + " is negative: '" + std::string(field) + "'");
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error == std::errc::result_out_of_range) {
      fail(what + " '" + std::string(field) + "' exceeds 2^64-1");
    }
    if (error != std::errc() || end != field.data() + field.size()) {
      fail(what + " is not a non-negative integer: '" + std::string(field) + "'");
    }
    return value;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw ParseError(source_, line_, problem);
  }

  const std::string& source_;
  std::size_t line_;
};

}  // namespace

std::vector<TensorLifetime> parse_lifetime_records(std::string_view text, const std::string& source,
                                                   std::vector<std::size_t>* lines) {
  // Control bytes no text file has: an ONNX model (protobuf) given without --onnx was
  // read as a line of 1 field.
  const std::string_view head = text.substr(0, 4096);
  if (std::any_of(head.begin(), head.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < '\t' || (byte > '\r' && byte < ' ');
      })) {
    throw ParseError(source, 1,
                     "binary data, not lifetime records '<bytes> <first_op> <last_op>' (an ONNX "
                     "model? plan it with `npumem plan memory --onnx " +
                         source + "`)");
  }
  std::vector<TensorLifetime> tensors;
  std::uint64_t total_bytes = 0;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string_view::npos || line[start] == '#') continue;
    tensors.push_back(RecordParser(source, line_number).parse(line));
    if (!add_within_limit(total_bytes, tensors.back().bytes)) {
      throw ParseError(source, line_number, past_the_sum());
    }
    if (lines != nullptr) lines->push_back(line_number);
  }
  return tensors;
}

void check_bytes_sum(std::span<const TensorLifetime> tensors, const std::string& source) {
  std::uint64_t total_bytes = 0;
  for (const TensorLifetime& tensor : tensors) {
    if (!add_within_limit(total_bytes, tensor.bytes)) throw Error(source + ": " + past_the_sum());
  }
}

}  // namespace npumem::plan
