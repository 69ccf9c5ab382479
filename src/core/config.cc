// NPUMEM_ALLOC_CONF: "key:value,key:value", read in this one place.
#include "npumem/config.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {

std::string_view strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::caching:
      return "caching";
    case Strategy::expandable:
      return "expandable";
    case Strategy::static_arena:
      return "static";
    case Strategy::planned:
      return "planned";
  }
  return "unknown";
}

std::string_view expandable_fallback_name(ExpandableFallback fallback) {
  switch (fallback) {
    case ExpandableFallback::automatic:
      return "auto";
    case ExpandableFallback::caching:
      return "caching";
    case ExpandableFallback::static_arena:
      return "static";
  }
  return "unknown";
}

namespace {

using Setter = std::function<void(Config&, std::string_view key, std::string_view value)>;

[[noreturn]] void bad_value(std::string_view key, std::string_view value,
                            std::string_view accepted) {
  throw ConfigError("bad value '" + std::string(value) + "' for key '" + std::string(key) +
                    "' (accepted: " + std::string(accepted) + ")");
}

std::uint64_t size_value(std::string_view key, std::string_view value) {
  try {
    return parse_size(value);
  } catch (const ConfigError&) {
    bad_value(key, value, "a size such as 512, 2MiB, 1.5GiB");
  }
}

bool bool_value(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  bad_value(key, value, "true, false, 1, 0");
}

Setter size_setter(std::uint64_t Config::*field, std::uint64_t minimum, bool power_of_two) {
  return [=](Config& c, std::string_view key, std::string_view value) {
    const std::uint64_t bytes = size_value(key, value);
    if (bytes < minimum || (power_of_two && (bytes & (bytes - 1)) != 0)) {
      bad_value(key, value,
                std::string(power_of_two ? "a power of two" : "a size") + " of at least " +
                    std::to_string(minimum) + " bytes");
    }
    c.*field = bytes;
  };
}

Setter bool_setter(bool Config::*field) {
  return [=](Config& c, std::string_view key, std::string_view value) {
    c.*field = bool_value(key, value);
  };
}

const std::map<std::string, Setter, std::less<>>& setters() {
  static const std::map<std::string, Setter, std::less<>> table = {
      {"strategy",
       [](Config& c, std::string_view key, std::string_view value) {
         if (value == "caching") {
           c.strategy = Strategy::caching;
         } else if (value == "expandable") {
           c.strategy = Strategy::expandable;
         } else if (value == "static") {
           c.strategy = Strategy::static_arena;
         } else if (value == "planned") {
           c.strategy = Strategy::planned;
         } else {
           bad_value(key, value, "caching, expandable, static, planned");
         }
       }},
      {"expandable_segments",
       [](Config& c, std::string_view key, std::string_view value) {
         if (bool_value(key, value)) {
           c.strategy = Strategy::expandable;
         } else if (c.strategy == Strategy::expandable) {
           c.strategy = Strategy::caching;
         }
       }},
      {"granule", size_setter(&Config::granule, 64, true)},
      {"small_size", size_setter(&Config::small_size, 1, false)},
      {"small_segment", size_setter(&Config::small_segment, 1, false)},
      {"large_segment", size_setter(&Config::large_segment, 1, false)},
      {"large_segment_threshold", size_setter(&Config::large_segment_threshold, 0, false)},
      {"spill_to_ddr", bool_setter(&Config::spill_to_ddr)},
      {"max_split_size", size_setter(&Config::max_split_size, 1, false)},
      {"garbage_collection_threshold",
       [](Config& c, std::string_view key, std::string_view value) {
         double fraction = 0;
         const auto [end, error] =
             std::from_chars(value.data(), value.data() + value.size(), fraction);
         if (error != std::errc{} || end != value.data() + value.size() || !(fraction > 0.0) ||
             !(fraction < 1.0)) {
           bad_value(key, value, "a fraction strictly between 0 and 1, e.g. 0.8");
         }
         c.garbage_collection_threshold = fraction;
       }},
      {"expandable_small_granule", size_setter(&Config::expandable_small_granule, 1, false)},
      {"expandable_large_granule", size_setter(&Config::expandable_large_granule, 1, false)},
      {"static_size", size_setter(&Config::static_size, 0, false)},
      {"static_fallback", bool_setter(&Config::static_fallback)},
      {"expandable_fallback",
       [](Config& c, std::string_view key, std::string_view value) {
         if (value == "auto") {
           c.expandable_fallback = ExpandableFallback::automatic;
         } else if (value == "caching") {
           c.expandable_fallback = ExpandableFallback::caching;
         } else if (value == "static") {
           c.expandable_fallback = ExpandableFallback::static_arena;
         } else {
           bad_value(key, value, "caching, static, auto");
         }
       }},
      {"hbm", size_setter(&Config::hbm_limit, 0, false)},
      {"ddr", size_setter(&Config::ddr_limit, 0, false)},
  };
  return table;
}

std::string known_keys() {
  std::string keys;
  for (const auto& [name, setter] : setters()) keys += (keys.empty() ? "" : ", ") + name;
  return keys;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

Config parse_config(std::string_view text, Config base) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw ConfigError("'" + std::string(item) + "' is not key:value (keys: " + known_keys() +
                        ")");
    }
    const std::string_view key = trim(item.substr(0, colon));
    const std::string_view value = trim(item.substr(colon + 1));
    const auto setter = setters().find(key);
    if (setter == setters().end()) {
      throw ConfigError("unknown key '" + std::string(key) + "' (keys: " + known_keys() + ")");
    }
    setter->second(base, key, value);
  }
  return base;
}

std::string to_string(const Config& c) {
  std::ostringstream out;
  out << "strategy:" << strategy_name(c.strategy) << ",granule:" << c.granule
      << ",small_size:" << c.small_size << ",small_segment:" << c.small_segment
      << ",large_segment:" << c.large_segment
      << ",large_segment_threshold:" << c.large_segment_threshold
      << ",spill_to_ddr:" << (c.spill_to_ddr ? "true" : "false")
      << ",max_split_size:" << c.max_split_size;
  if (c.garbage_collection_threshold > 0) {
    std::array<char, 32> digits{};
    const auto result =
        std::to_chars(digits.data(), digits.data() + digits.size(), c.garbage_collection_threshold);
    out << ",garbage_collection_threshold:" << std::string_view(digits.data(), result.ptr);
  }
  out << ",expandable_small_granule:" << c.expandable_small_granule
      << ",expandable_large_granule:" << c.expandable_large_granule
      << ",static_size:" << c.static_size
      << ",static_fallback:" << (c.static_fallback ? "true" : "false")
      << ",expandable_fallback:" << expandable_fallback_name(c.expandable_fallback)
      << ",hbm:" << c.hbm_limit << ",ddr:" << c.ddr_limit;
  return out.str();
}

Config config_from_environment() {
  const char* text = std::getenv("NPUMEM_ALLOC_CONF");
  if (text == nullptr) return Config{};
  try {
    return parse_config(text);
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("NPUMEM_ALLOC_CONF: ") + error.what());
  }
}

}  // namespace npumem
