// NPUMEM_ALLOC_CONF: "key:value,key:value", read in this one place.
#include "npumem/config.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

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

std::string_view planned_fallback_name(PlannedFallback fallback) {
  switch (fallback) {
    case PlannedFallback::automatic:
      return "auto";
    case PlannedFallback::caching:
      return "caching";
    case PlannedFallback::expandable:
      return "expandable";
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

// PyTorch's PYTORCH_CUDA_ALLOC_CONF spells booleans True and False; a copied setting
// should mean the same here. nullopt: no spelling of either.
std::optional<bool> bool_spelling(std::string_view value) {
  if (value == "true" || value == "True" || value == "1") return true;
  if (value == "false" || value == "False" || value == "0") return false;
  return std::nullopt;
}

bool bool_value(std::string_view key, std::string_view value) {
  if (const std::optional<bool> spelled = bool_spelling(value)) return *spelled;
  bad_value(key, value, "true, false, True, False, 1, 0");
}

// `value` as a whole decimal number from `least` to `most`; nullopt otherwise.
std::optional<std::uint64_t> whole_number(std::string_view value, std::uint64_t least,
                                          std::uint64_t most) {
  std::uint64_t number = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (error != std::errc{} || end != value.data() + value.size() || number < least ||
      number > most) {
    return std::nullopt;
  }
  return number;
}

// Every size key's accepted range. The upper bounds keep size arithmetic far from
// 2^64 (a request is at most 2^63 bytes; adding any of these cannot wrap) and name
// sizes no device holds.
struct SizeKey {
  std::string_view name;
  std::uint64_t Config::*field;
  std::uint64_t minimum;
  std::uint64_t maximum;
  bool power_of_two;
};

constexpr std::uint64_t kTiB = 1024 * GiB;
constexpr std::uint64_t kPiB = 1024 * kTiB;
constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

constexpr std::array<SizeKey, 11> kSizeKeys = {{
    {"granule", &Config::granule, 64, GiB, true},
    {"small_size", &Config::small_size, 1, kTiB, false},
    {"small_segment", &Config::small_segment, 1, kTiB, false},
    {"large_segment", &Config::large_segment, 1, kTiB, false},
    {"large_segment_threshold", &Config::large_segment_threshold, 0, kPiB, false},
    {"max_split_size", &Config::max_split_size, 1, kUnlimited, false},
    {"expandable_small_granule", &Config::expandable_small_granule, 1, kTiB, false},
    {"expandable_large_granule", &Config::expandable_large_granule, 1, kTiB, false},
    {"static_size", &Config::static_size, 0, kPiB, false},
    {"hbm", &Config::hbm_limit, 0, kPiB, false},
    {"ddr", &Config::ddr_limit, 0, kPiB, false},
}};

std::string accepted_range(const SizeKey& key) {
  std::string text = std::string(key.power_of_two ? "a power of two" : "a size") + " from " +
                     format_bytes(key.minimum);
  if (key.maximum != kUnlimited) text += " to " + format_bytes(key.maximum);
  return text;
}

bool in_range(const SizeKey& key, std::uint64_t bytes) {
  return bytes >= key.minimum && bytes <= key.maximum &&
         (!key.power_of_two || (bytes & (bytes - 1)) == 0);
}

Setter size_setter(const SizeKey& size_key) {
  return [&size_key](Config& c, std::string_view key, std::string_view value) {
    const std::uint64_t bytes = size_value(key, value);
    if (!in_range(size_key, bytes)) bad_value(key, value, accepted_range(size_key));
    c.*size_key.field = bytes;
  };
}

Setter bool_setter(bool Config::*field) {
  return [=](Config& c, std::string_view key, std::string_view value) {
    c.*field = bool_value(key, value);
  };
}

// A key whose value is one of `choices`, spelled as `name_of` prints it (so parsing and
// printing agree); the error lists them in this order.
template <typename Enum, std::size_t N>
Setter enum_setter(Enum Config::*field, std::string_view (*name_of)(Enum),
                   std::array<Enum, N> choices) {
  return [=](Config& c, std::string_view key, std::string_view value) {
    std::string accepted;
    for (const Enum choice : choices) {
      if (value == name_of(choice)) {
        c.*field = choice;
        return;
      }
      accepted += (accepted.empty() ? "" : ", ") + std::string(name_of(choice));
    }
    bad_value(key, value, accepted);
  };
}

using SetterTable = std::map<std::string, Setter, std::less<>>;

SetterTable make_setters() {
  SetterTable table = {
      {"strategy", enum_setter(&Config::strategy, strategy_name,
                               std::array{Strategy::caching, Strategy::expandable,
                                          Strategy::static_arena, Strategy::planned})},
      {"expandable_segments",
       [](Config& c, std::string_view key, std::string_view value) {
         if (bool_value(key, value)) {
           c.strategy = Strategy::expandable;
         } else if (c.strategy == Strategy::expandable) {
           c.strategy = Strategy::caching;
         }
       }},
      {"spill_to_ddr", bool_setter(&Config::spill_to_ddr)},
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
      // PyTorch's spelling of max_split_size: a whole number of MiB.
      {"max_split_size_mb",
       [](Config& c, std::string_view key, std::string_view value) {
         const std::optional<std::uint64_t> mib = whole_number(value, 1, kPiB / MiB);
         if (!mib) {
           bad_value(key, value,
                     "a whole number of MiB from 1 to " + std::to_string(kPiB / MiB) +
                         " (1 PiB), e.g. 128");
         }
         c.max_split_size = *mib * MiB;
       }},
      {"static_fallback", bool_setter(&Config::static_fallback)},
      {"expandable_fallback",
       enum_setter(&Config::expandable_fallback, expandable_fallback_name,
                   std::array{ExpandableFallback::caching, ExpandableFallback::static_arena,
                              ExpandableFallback::automatic})},
      {"planned_fallback",
       enum_setter(&Config::planned_fallback, planned_fallback_name,
                   std::array{PlannedFallback::caching, PlannedFallback::expandable,
                              PlannedFallback::automatic})},
      {"planned_max_plans",
       [](Config& c, std::string_view key, std::string_view value) {
         const std::optional<std::uint64_t> plans = whole_number(value, 1, kMaxPlannedPlans);
         if (!plans) {
           bad_value(key, value,
                     "a whole number of plans from 1 to " + std::to_string(kMaxPlannedPlans) +
                         ", e.g. 16");
         }
         c.planned_max_plans = static_cast<std::uint32_t>(*plans);
       }},
  };
  for (const SizeKey& key : kSizeKeys) table.emplace(std::string(key.name), size_setter(key));
  return table;
}

const SetterTable& setters() {
  static const SetterTable table = make_setters();
  return table;
}

std::string known_keys() {
  std::string keys;
  for (const auto& [name, setter] : setters()) keys += (keys.empty() ? "" : ", ") + name;
  return keys;
}

// Keys of PyTorch's PYTORCH_CUDA_ALLOC_CONF that npumem has no counterpart for: a
// setting copied from there is refused by name rather than as a typo.
std::string pytorch_only_note(std::string_view key) {
  constexpr std::array<std::string_view, 5> kPyTorchOnly = {
      "roundup_power2_divisions", "backend", "release_lock_on_cudamalloc",
      "pinned_use_cuda_host_register", "pinned_num_register_threads"};
  for (const std::string_view name : kPyTorchOnly) {
    if (key == name) return ": a PyTorch allocator setting npumem does not have";
  }
  return "";
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Calls visit(item) for each non-empty "key:value" item of a config string.
template <typename Visit>
void for_each_item(std::string_view text, Visit visit) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (!item.empty()) visit(item);
  }
}

// The key of an item (the whole item when it has no ':', which parse_config refuses).
std::string_view item_key(std::string_view item) {
  return trim(item.substr(0, item.find(':')));
}

// The setting a key sets: PyTorch's spellings set npumem's.
std::string_view setting_of(std::string_view key) {
  if (key == "max_split_size_mb") return "max_split_size";
  if (key == "expandable_segments") return "strategy";
  return key;
}

// The setting an item of the overriding text replaces. expandable_segments:false
// replaces only its own spelling: it turns expandable off and leaves any other strategy
// (it dropped NPUMEM_ALLOC_CONF's strategy:planned for caching).
std::string_view replaced_setting(std::string_view item) {
  const std::string_view key = item_key(item);
  const std::size_t colon = item.find(':');
  if (key == "expandable_segments" && colon != std::string_view::npos) {
    const std::optional<bool> on = bool_spelling(trim(item.substr(colon + 1)));
    if (on && !*on) return key;
  }
  return setting_of(key);
}

// `text` less the items whose setting `overrides` sets (under either spelling).
std::string without_keys_of(std::string_view text, std::string_view overrides) {
  std::vector<std::string_view> replaced;
  for_each_item(overrides,
                [&](std::string_view item) { replaced.push_back(replaced_setting(item)); });
  std::string kept;
  for_each_item(text, [&](std::string_view item) {
    if (item.find(':') != std::string_view::npos &&
        std::find(replaced.begin(), replaced.end(), setting_of(item_key(item))) != replaced.end()) {
      return;
    }
    kept.append(kept.empty() ? "" : ",").append(item);
  });
  return kept;
}

}  // namespace

Config parse_config(std::string_view text, Config base) {
  // strategy:X and expandable_segments:true, or strategy:expandable and
  // expandable_segments:false, in one text: which one won depended on their order.
  std::string_view strategy_given;
  std::optional<bool> expandable_given;
  for_each_item(text, [&](std::string_view item) {
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw ConfigError("'" + std::string(item) + "' is not key:value (keys: " + known_keys() +
                        ")");
    }
    const std::string_view key = item_key(item);
    const std::string_view value = trim(item.substr(colon + 1));
    const auto setter = setters().find(key);
    if (setter == setters().end()) {
      throw ConfigError("unknown key '" + std::string(key) + "'" + pytorch_only_note(key) +
                        " (keys: " + known_keys() + ")");
    }
    setter->second(base, key, value);
    if (key == "strategy") strategy_given = value;
    if (key == "expandable_segments") expandable_given = base.strategy == Strategy::expandable;
  });
  if (expandable_given && !strategy_given.empty() &&
      *expandable_given != (strategy_given == "expandable")) {
    throw ConfigError("strategy:" + std::string(strategy_given) + " and expandable_segments:" +
                      (*expandable_given ? "true disagree (expandable_segments:true is "
                                           "strategy:expandable)"
                                         : "false disagree (expandable_segments:false turns "
                                           "expandable into caching)") +
                      "; give one of them");
  }
  validate(base);  // settings that are fine alone but not together (max_split_size)
  return base;
}

void validate(const Config& config) {
  for (const SizeKey& key : kSizeKeys) {
    const std::uint64_t bytes = config.*key.field;
    if (!in_range(key, bytes)) {
      throw ConfigError(std::string(key.name) + " is " + std::to_string(bytes) +
                        " bytes (accepted: " + accepted_range(key) + ")");
    }
  }
  if (config.planned_max_plans == 0 || config.planned_max_plans > kMaxPlannedPlans) {
    throw ConfigError("planned_max_plans is " + std::to_string(config.planned_max_plans) +
                      " (accepted: 1 to " + std::to_string(kMaxPlannedPlans) + ")");
  }
  // Blocks of max_split_size and more serve only requests about their size, so a new
  // large segment must be below it to serve the requests it is made for (PyTorch asks
  // max_split_size_mb > 20 for its 20 MiB segments).
  if (config.max_split_size <= config.large_segment) {
    throw ConfigError("max_split_size (" + format_bytes(config.max_split_size) +
                      ") must be larger than large_segment (" + format_bytes(config.large_segment) +
                      "): a new large segment would be too big to serve the requests it is made "
                      "for (with max_split_size_mb, more than " +
                      std::to_string(config.large_segment / MiB) + ")");
  }
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
      << ",planned_fallback:" << planned_fallback_name(c.planned_fallback)
      << ",planned_max_plans:" << c.planned_max_plans << ",hbm:" << c.hbm_limit
      << ",ddr:" << c.ddr_limit;
  return out.str();
}

namespace {

// What is wrong with `text` alone, over the defaults; empty when it is a good config.
std::string parse_error(std::string_view text) {
  try {
    parse_config(text);
    return {};
  } catch (const ConfigError& error) {
    return error.what();
  }
}

}  // namespace

Config config_from_environment() {
  return config_over_environment("", "");
}

Config config_over_environment(std::string_view conf, std::string_view conf_name) {
  const char* environment = std::getenv("NPUMEM_ALLOC_CONF");
  const std::string kept = environment == nullptr ? "" : without_keys_of(environment, conf);
  Config base;
  try {
    base = parse_config(kept);
  } catch (const ConfigError& error) {
    // Both bad: both named, so that fixing one is not followed by the other's surprise.
    const std::string also = parse_error(conf);
    throw ConfigError(std::string("NPUMEM_ALLOC_CONF: ") + error.what() +
                      (also.empty() ? "" : "; and " + std::string(conf_name) + ": " + also));
  }
  try {
    return parse_config(conf, base);
  } catch (const ConfigError& error) {
    // Settings that do not go together may come from both (max_split_size from one,
    // large_segment from the other): then both are named.
    const bool both = !kept.empty() && parse_error(conf).empty();
    throw ConfigError(std::string(conf_name) + (both ? " over NPUMEM_ALLOC_CONF: " : ": ") +
                      error.what());
  }
}

}  // namespace npumem
