#include "npumem/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <span>

#include "npumem/errors.h"

namespace npumem {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kKilo = 1000;

struct Unit {
  std::string_view name;  // lower case
  std::uint64_t bytes;
};

constexpr std::uint64_t kTiB = 1024 * GiB;

constexpr std::array<Unit, 20> kSizeUnits = {{{"", 1},
                                              {"b", 1},
                                              {"k", KiB},
                                              {"kb", KiB},
                                              {"kib", KiB},
                                              {"m", MiB},
                                              {"mb", MiB},
                                              {"mib", MiB},
                                              {"g", GiB},
                                              {"gb", GiB},
                                              {"gib", GiB},
                                              {"t", kTiB},
                                              {"tb", kTiB},
                                              {"tib", kTiB},
                                              {"p", 1024 * kTiB},
                                              {"pb", 1024 * kTiB},
                                              {"pib", 1024 * kTiB},
                                              // What format_bytes prints past 1024 PiB.
                                              {"e", 1024 * 1024 * kTiB},
                                              {"eb", 1024 * 1024 * kTiB},
                                              {"eib", 1024 * 1024 * kTiB}}};

constexpr std::array<Unit, 14> kRateUnits = {{{"", 1},
                                              {"b", 1},
                                              {"k", kKilo},
                                              {"kb", kKilo},
                                              {"kib", KiB},
                                              {"m", kKilo* kKilo},
                                              {"mb", kKilo* kKilo},
                                              {"mib", MiB},
                                              {"g", kKilo* kKilo* kKilo},
                                              {"gb", kKilo* kKilo* kKilo},
                                              {"gib", GiB},
                                              {"t", kKilo* kKilo* kKilo* kKilo},
                                              {"tb", kKilo* kKilo* kKilo* kKilo},
                                              {"tib", kTiB}}};

// What is being parsed, for the error message.
struct Quantity {
  std::string_view what;
  std::string_view expected;
  std::span<const Unit> units;
};

constexpr Quantity kSize = {
    "size",
    "a number with an optional unit B, KiB, MiB, GiB, TiB, PiB, EiB, K/M/G/T/P/E or "
    "KB/MB/GB/TB/PB/EB "
    "(all binary), e.g. 16GiB, 1.5GiB, 4096",
    kSizeUnits};

constexpr Quantity kBandwidth = {
    "bandwidth",
    "bytes per second: a number with an optional unit B, KB/MB/GB/TB or K/M/G/T (decimal), "
    "KiB/MiB/GiB/TiB (binary) and an optional /s, e.g. 1200GB/s, 1.2TB/s",
    kRateUnits};

[[noreturn]] void reject(const Quantity& quantity, std::string_view text,
                         std::string_view problem) {
  throw ConfigError("bad " + std::string(quantity.what) + " '" + std::string(text) + "': " +
                    std::string(problem) + " (expected " + std::string(quantity.expected) + ")");
}

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The number part of "12.5GiB": whole "12", fraction "5", rest "GiB".
struct Decimal {
  std::string_view whole;
  std::string_view fraction;
  std::string_view rest;
};

Decimal split_decimal(std::string_view text) {
  Decimal number;
  std::size_t pos = 0;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  number.whole = text.substr(0, pos);
  if (pos < text.size() && text[pos] == '.') {
    const std::size_t start = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    number.fraction = text.substr(start, pos - start);
  }
  number.rest = text.substr(pos);
  return number;
}

std::uint64_t unit_bytes(const Quantity& quantity, std::string_view text,
                         std::string_view unit_text) {
  const std::string unit = lower(trim(unit_text));
  for (const Unit& candidate : quantity.units) {
    if (candidate.name == unit) return candidate.bytes;
  }
  reject(quantity, text, "unknown unit '" + std::string(trim(unit_text)) + "'");
}

std::uint64_t parse_whole(const Quantity& quantity, std::string_view text,
                          std::string_view digits) {
  std::uint64_t value = 0;
  for (char digit : digits) {
    const auto d = static_cast<std::uint64_t>(digit - '0');
    if (value > (kMax - d) / 10) reject(quantity, text, "too large");
    value = value * 10 + d;
  }
  return value;
}

// floor(0.<digits> * unit), exactly: binary long division over the bits of unit, so
// "1.5GiB" is exactly 1.5 * 2^30 bytes. Digits past the 18th cannot matter in practice
// and are dropped to keep the remainder below 2^63.
std::uint64_t scaled_fraction(std::string_view digits, std::uint64_t unit) {
  constexpr std::size_t kMaxDigits = 18;
  digits = digits.substr(0, std::min(digits.size(), kMaxDigits));
  std::uint64_t numerator = 0;
  std::uint64_t denominator = 1;
  for (char digit : digits) {
    numerator = numerator * 10 + static_cast<std::uint64_t>(digit - '0');
    denominator *= 10;
  }
  std::uint64_t quotient = 0;
  std::uint64_t remainder = 0;
  for (int bit = 63; bit >= 0; --bit) {
    quotient *= 2;
    remainder *= 2;
    if ((unit >> bit) & 1U) remainder += numerator;
    while (remainder >= denominator) {
      remainder -= denominator;
      ++quotient;
    }
  }
  return quotient;
}

std::uint64_t parse_quantity(const Quantity& quantity, std::string_view text,
                             std::string_view body) {
  body = trim(body);
  if (body.empty()) reject(quantity, text, "empty");
  if (body.front() == '-') reject(quantity, text, "negative");
  const Decimal number = split_decimal(body);
  if (number.whole.empty() && number.fraction.empty()) reject(quantity, text, "no number");
  const std::uint64_t unit = unit_bytes(quantity, text, number.rest);
  // "1.5" read as 1 byte; in a larger unit the fraction's rounding is below a byte.
  if (unit == 1 && number.fraction.find_first_not_of('0') != std::string_view::npos) {
    reject(quantity, text, "a fraction of a byte");
  }
  const std::uint64_t whole = parse_whole(quantity, text, number.whole);
  if (whole > kMax / unit) reject(quantity, text, "too large");
  const std::uint64_t whole_bytes = whole * unit;
  const std::uint64_t fraction_bytes = scaled_fraction(number.fraction, unit);
  if (fraction_bytes > kMax - whole_bytes) reject(quantity, text, "too large");
  return whole_bytes + fraction_bytes;
}

// Three significant digits of value / divisor^k with the largest k that keeps it >= 1.
std::string three_digits(std::uint64_t amount, double divisor, std::span<const char* const> names) {
  std::size_t unit = 0;
  double value = static_cast<double>(amount);
  while (value >= divisor && unit + 1 < names.size()) {
    value /= divisor;
    ++unit;
  }
  const int decimals = value < 10.0 ? 2 : (value < 100.0 ? 1 : 0);
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  // A value that rounds up to the divisor ("1024 KiB") reads better as "1.00 MiB".
  if (std::strtod(text.data(), nullptr) >= divisor && unit + 1 < names.size()) {
    std::snprintf(text.data(), text.size(), "%.2f", 1.0);
    ++unit;
  }
  return std::string(text.data()) + " " + names[unit];
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  return parse_quantity(kSize, text, text);
}

std::uint64_t parse_bandwidth(std::string_view text) {
  std::string_view body = trim(text);
  if (body.size() >= 2 && lower(body.substr(body.size() - 2)) == "/s") {
    body.remove_suffix(2);
  }
  return parse_quantity(kBandwidth, text, body);
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 7> kNames = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < KiB) return std::to_string(bytes) + " B";
  return three_digits(bytes, 1024.0, kNames);
}

std::string format_count(std::uint64_t count) {
  const std::string digits = std::to_string(count);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_count(std::uint64_t count, std::string_view noun) {
  return format_count(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

std::string format_bandwidth(std::uint64_t bytes_per_s) {
  static constexpr std::array<const char*, 7> kNames = {"B/s",  "KB/s", "MB/s", "GB/s",
                                                        "TB/s", "PB/s", "EB/s"};
  if (bytes_per_s < kKilo) return std::to_string(bytes_per_s) + " B/s";
  return three_digits(bytes_per_s, 1000.0, kNames);
}

}  // namespace npumem
