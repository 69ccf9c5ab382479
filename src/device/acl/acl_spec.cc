#include "acl_spec.h"

#include <charconv>
#include <set>
#include <string>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem {
namespace {

constexpr std::string_view kKeys = "hbm=SIZE, ddr=SIZE (0: no DDR tier), vmm=auto|off";

[[noreturn]] void reject(std::string_view text, const std::string& problem) {
  throw ConfigError("bad device spec '" + std::string(text) + "': " + problem);
}

std::uint64_t size_of(std::string_view text, std::string_view key, std::string_view value) {
  try {
    return parse_size(value);
  } catch (const ConfigError& error) {
    reject(text, "key '" + std::string(key) + "': " + error.what());
  }
}

void apply(std::string_view text, AclSpec& spec, std::string_view key, std::string_view value) {
  if (key == "hbm") {
    spec.hbm_limit = size_of(text, key, value);
    if (spec.hbm_limit == 0) reject(text, "key 'hbm': the HBM tier cannot be 0");
  } else if (key == "ddr") {
    spec.ddr_limit = size_of(text, key, value);
    spec.ddr = spec.ddr_limit != 0;
  } else if (key == "vmm") {
    if (value != "auto" && value != "off") {
      reject(text, "key 'vmm': '" + std::string(value) + "' is not one of auto, off");
    }
    spec.virtual_memory = value == "auto";
  } else {
    reject(text, "unknown key '" + std::string(key) + "'; keys: " + std::string(kKeys));
  }
}

}  // namespace

AclSpec parse_acl_spec(std::string_view text) {
  AclSpec spec;
  constexpr std::string_view kWord = "acl";
  if (!text.starts_with(kWord) || (text.size() > kWord.size() && text[kWord.size()] != ':')) {
    reject(text, "an Ascend NPU is 'acl', 'acl:N' or 'acl:N,key=value,...'");
  }
  if (text.size() <= kWord.size() + 1) {
    if (text.size() == kWord.size() + 1) reject(text, "no device index after 'acl:'");
    return spec;
  }
  std::string_view rest = text.substr(kWord.size() + 1);
  const std::string_view digits = rest.substr(0, rest.find(','));
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), spec.ordinal);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      spec.ordinal < 0) {
    reject(text, "'" + std::string(digits) + "' is not a device index (a whole number, 0 or more)");
  }
  rest.remove_prefix(digits.size());
  std::set<std::string_view> seen;
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the ','
    const std::string_view item = rest.substr(0, rest.find(','));
    rest.remove_prefix(item.size());
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      reject(text, "'" + std::string(item) + "' is not key=value; keys: " + std::string(kKeys));
    }
    const std::string_view key = item.substr(0, equals);
    if (!seen.insert(key).second) reject(text, "key '" + std::string(key) + "' given twice");
    apply(text, spec, key, item.substr(equals + 1));
  }
  return spec;
}

}  // namespace npumem
