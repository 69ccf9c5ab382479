#include "sim_spec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <limits>
#include <set>
#include <vector>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

constexpr std::uint64_t kMinGranularity = 4 * KiB;
constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

// A problem with one value; parse_sim_spec adds which key and spec it came from.
struct BadValue {
  std::string problem;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::uint64_t size_value(std::string_view value) {
  try {
    return parse_size(value);
  } catch (const ConfigError& error) {
    throw BadValue{error.what()};
  }
}

std::uint64_t bandwidth_value(std::string_view value) {
  try {
    return parse_bandwidth(value);
  } catch (const ConfigError& error) {
    throw BadValue{error.what()};
  }
}

std::uint64_t unsigned_value(std::string_view value, std::uint64_t max) {
  std::uint64_t result = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size() || result > max) {
    throw BadValue{"'" + std::string(value) + "' is not a whole number in [0, " +
                   std::to_string(max) + "]"};
  }
  return result;
}

double probability_value(std::string_view value) {
  double result = 0.0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size() || !(result >= 0.0) ||
      result > 1.0) {
    throw BadValue{"'" + std::string(value) + "' is not a probability in [0, 1]"};
  }
  return result;
}

bool bool_value(std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  throw BadValue{"'" + std::string(value) + "' is not one of true, false, 1, 0"};
}

Backing backing_value(std::string_view value) {
  if (value == "none") return Backing::none;
  if (value == "host") return Backing::host;
  throw BadValue{"'" + std::string(value) + "' is not one of none, host"};
}

constexpr std::array<std::pair<std::string_view, FaultOp>, 3> kFaultOpNames = {
    {{"segment", FaultOp::segment}, {"create", FaultOp::create}, {"map", FaultOp::map}}};

std::uint8_t fault_ops_value(std::string_view value) {
  std::uint8_t ops = 0;
  for (std::string_view name : split(value, '+')) {
    const auto* found = std::find_if(kFaultOpNames.begin(), kFaultOpNames.end(),
                                     [&](const auto& entry) { return entry.first == name; });
    if (found == kFaultOpNames.end()) {
      throw BadValue{"'" + std::string(name) +
                     "' is not a device call; use segment, create, map joined by '+'"};
    }
    ops |= static_cast<std::uint8_t>(found->second);
  }
  return ops;
}

using Setter = std::function<void(SimSpec&, std::string_view)>;

struct Key {
  std::string_view name;
  Setter set;
};

const std::vector<Key>& keys() {
  static const std::vector<Key> kKeys = {
      {"hbm", [](SimSpec& s, std::string_view v) { s.hbm_bytes = size_value(v); }},
      {"ddr", [](SimSpec& s, std::string_view v) { s.ddr_bytes = size_value(v); }},
      {"hbm_bw", [](SimSpec& s, std::string_view v) { s.hbm_bandwidth = bandwidth_value(v); }},
      {"ddr_bw", [](SimSpec& s, std::string_view v) { s.ddr_bandwidth = bandwidth_value(v); }},
      {"granularity", [](SimSpec& s, std::string_view v) { s.granularity = size_value(v); }},
      {"l2", [](SimSpec& s, std::string_view v) { s.cache_bytes = size_value(v); }},
      {"backing", [](SimSpec& s, std::string_view v) { s.backing = backing_value(v); }},
      {"vmm", [](SimSpec& s, std::string_view v) { s.virtual_memory = bool_value(v); }},
      {"id",
       [](SimSpec& s, std::string_view v) {
         s.id = static_cast<std::uint32_t>(
             unsigned_value(v, std::numeric_limits<std::uint32_t>::max()));
       }},
      {"fail_every",
       [](SimSpec& s, std::string_view v) { s.faults.every = unsigned_value(v, kMaxU64); }},
      {"fail_prob",
       [](SimSpec& s, std::string_view v) { s.faults.probability = probability_value(v); }},
      {"seed", [](SimSpec& s, std::string_view v) { s.faults.seed = unsigned_value(v, kMaxU64); }},
      {"fail_ops", [](SimSpec& s, std::string_view v) { s.faults.ops = fault_ops_value(v); }},
  };
  return kKeys;
}

std::string key_list() {
  std::string names;
  for (const Key& key : keys()) names += (names.empty() ? "" : ", ") + std::string(key.name);
  return names;
}

[[noreturn]] void reject(std::string_view text, const std::string& problem) {
  throw ConfigError("bad device spec '" + std::string(text) + "': " + problem);
}

void apply_item(SimSpec& spec, std::string_view text, std::string_view item,
                std::set<std::string_view>& seen) {
  const std::size_t equals = item.find('=');
  if (equals == std::string_view::npos) {
    reject(text, "'" + std::string(item) + "' is not key=value; keys: " + key_list());
  }
  const std::string_view name = trim(item.substr(0, equals));
  const std::string_view value = trim(item.substr(equals + 1));
  const auto key =
      std::find_if(keys().begin(), keys().end(), [&](const Key& k) { return k.name == name; });
  if (key == keys().end()) {
    reject(text, "unknown key '" + std::string(name) + "'; keys: " + key_list());
  }
  if (!seen.insert(key->name).second) reject(text, "key '" + std::string(name) + "' given twice");
  try {
    key->set(spec, value);
  } catch (const BadValue& bad) {
    reject(text, "key '" + std::string(name) + "': " + bad.problem);
  }
}

// The largest unit that divides the amount exactly: "64GiB", "1200GB/s", "12345".
std::string exact_text(std::uint64_t amount, std::uint64_t base,
                       const std::array<std::string_view, 4>& names, std::string_view suffix) {
  std::uint64_t unit = base * base * base * base;
  for (std::string_view name : names) {
    if (amount != 0 && amount % unit == 0) {
      return std::to_string(amount / unit) + std::string(name) + std::string(suffix);
    }
    unit /= base;
  }
  return std::to_string(amount) + std::string(suffix);
}

std::string size_text(std::uint64_t bytes) {
  return exact_text(bytes, 1024, {"TiB", "GiB", "MiB", "KiB"}, "");
}

std::string bandwidth_text(std::uint64_t bytes_per_s) {
  return exact_text(bytes_per_s, 1000, {"TB", "GB", "MB", "KB"}, "/s");
}

std::string probability_text(double probability) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), probability);
  return std::string(buffer.data(), result.ptr);
}

std::string fault_ops_text(std::uint8_t ops) {
  std::string text;
  for (const auto& [name, op] : kFaultOpNames) {
    if ((ops & static_cast<std::uint8_t>(op)) != 0) {
      text += (text.empty() ? "" : "+") + std::string(name);
    }
  }
  return text;
}

std::string fault_keys_text(const FaultSpec& faults) {
  const FaultSpec defaults;
  std::string text;
  if (faults.every != defaults.every) text += ",fail_every=" + std::to_string(faults.every);
  if (faults.probability != defaults.probability) {
    text += ",fail_prob=" + probability_text(faults.probability);
  }
  if (faults.seed != defaults.seed) text += ",seed=" + std::to_string(faults.seed);
  if (faults.ops != defaults.ops) text += ",fail_ops=" + fault_ops_text(faults.ops);
  return text;
}

}  // namespace

std::string_view backing_name(Backing backing) {
  return backing == Backing::host ? "host" : "none";
}

void validate_sim_spec(const SimSpec& spec) {
  const std::uint64_t g = spec.granularity;
  if (g < kMinGranularity || (g & (g - 1)) != 0) {
    throw ConfigError("key 'granularity': " + std::to_string(g) +
                      " is not a power of two of at least 4KiB (the page size)");
  }
  if (spec.hbm_bytes == 0 && spec.ddr_bytes == 0) {
    throw ConfigError("keys 'hbm' and 'ddr' are both 0; the device needs at least one tier");
  }
  // Accepted, a larger tier made a process that `npumem smi` could not show.
  for (const auto& [key, bytes] : {std::pair{"hbm", spec.hbm_bytes}, {"ddr", spec.ddr_bytes}}) {
    if (bytes > kMaxTierBytes) {
      throw ConfigError(std::string("key '") + key + "': " + format_bytes(bytes) +
                        " is more than a device holds (" + format_bytes(kMaxTierBytes) +
                        " at most)");
    }
  }
  if (!(spec.faults.probability >= 0.0 && spec.faults.probability <= 1.0)) {
    throw ConfigError("key 'fail_prob': " + probability_text(spec.faults.probability) +
                      " is not a probability in [0, 1]");
  }
}

SimSpec parse_sim_spec(std::string_view text) {
  constexpr std::string_view kPrefix = "sim";
  if (text.substr(0, kPrefix.size()) != kPrefix ||
      (text.size() > kPrefix.size() && text[kPrefix.size()] != ':')) {
    reject(text, "a virtual NPU spec is 'sim' or 'sim:key=value,...'");
  }
  SimSpec spec;
  if (text.size() > kPrefix.size()) {
    std::set<std::string_view> seen;
    for (std::string_view item : split(text.substr(kPrefix.size() + 1), ',')) {
      apply_item(spec, text, item, seen);
    }
  }
  try {
    validate_sim_spec(spec);
  } catch (const ConfigError& error) {
    reject(text, error.what());
  }
  return spec;
}

std::string to_string(const SimSpec& spec) {
  return "sim:hbm=" + size_text(spec.hbm_bytes) + ",ddr=" + size_text(spec.ddr_bytes) +
         ",hbm_bw=" + bandwidth_text(spec.hbm_bandwidth) +
         ",ddr_bw=" + bandwidth_text(spec.ddr_bandwidth) +
         ",granularity=" + size_text(spec.granularity) + ",l2=" + size_text(spec.cache_bytes) +
         ",backing=" + std::string(backing_name(spec.backing)) +
         ",vmm=" + (spec.virtual_memory ? "true" : "false") + ",id=" + std::to_string(spec.id) +
         fault_keys_text(spec.faults);
}

}  // namespace npumem
