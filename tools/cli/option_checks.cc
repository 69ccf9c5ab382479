#include <bit>

#include "commands.h"
#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

// A validator returns the problem, or "" when the text is accepted.
template <typename Check>
CLI::Validator validator(const std::string& description, Check check) {
  return CLI::Validator(
      [check](std::string& text) -> std::string {
        try {
          return check(text);
        } catch (const ConfigError& e) {
          return e.what();
        }
      },
      description);
}

}  // namespace

CLI::Validator size_check() {
  return validator("SIZE", [](const std::string& text) {
    (void)parse_size(text);
    return std::string();
  });
}

CLI::Validator power_of_two_size_check() {
  return validator("SIZE", [](const std::string& text) {
    const std::uint64_t bytes = parse_size(text);
    return std::has_single_bit(bytes) ? std::string() : "'" + text + "' is not a power of two";
  });
}

CLI::Validator bandwidth_check() {
  return validator("BANDWIDTH", [](const std::string& text) {
    (void)parse_bandwidth(text);
    return std::string();
  });
}

}  // namespace npumem::cli
