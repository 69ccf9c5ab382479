#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

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

// CLI11's NonNegativeNumber and PositiveNumber name the top of their range, a 309-digit
// number, in their message; these say what is wrong with the value alone.
template <typename Accept>
CLI::Validator sign_check(const std::string& description, const std::string& problem,
                          Accept accept) {
  return validator(description, [problem, accept](const std::string& text) {
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    // Text that is no number is left to the option's own conversion, which names it.
    if (error != std::errc() || end != text.data() + text.size()) return std::string();
    if (std::isnan(value)) return text + " is not a number";
    return accept(value) ? std::string() : text + " is " + problem;
  });
}

// CLI11 reads -1 into an unsigned option as 2^64-1, and a number past 2^64-1 as 2^64-1.
CLI::Validator whole_number_check() {
  return validator("WHOLE NUMBER", [](const std::string& text) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) return text + " is too large";
    if (error != std::errc() || end != text.data() + text.size()) {
      return text.starts_with('-') ? text + " is negative" : text + " is not a whole number";
    }
    return std::string();
  });
}

CLI::Validator output_path_check() {
  return validator("FILE", [](const std::string& text) {
    return text.empty() ? std::string("an empty path names no file to write") : std::string();
  });
}

std::map<std::string, std::uint64_t> parse_quotas(const std::vector<std::string>& given,
                                                  const Trace& trace) {
  std::map<std::string, std::uint64_t> quotas;
  for (const std::string& text : given) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw ConfigError("--quota '" + text + "': expected NAME=SIZE, e.g. encoder=2GiB");
    }
    const std::string name = text.substr(0, equals);
    if (name == kDefaultPoolName) {
      throw ConfigError("--quota " + name +
                        ": the default pool has no quota (static_size sizes "
                        "its static arena)");
    }
    if (std::find(trace.pools.begin(), trace.pools.end(), name) == trace.pools.end()) {
      std::string known;
      for (const std::string& pool : trace.pools) {
        if (pool != kDefaultPoolName) known += (known.empty() ? "" : ", ") + pool;
      }
      throw ConfigError(
          "--quota " + name + ": " + trace.source + " has no pool of that name" +
          (known.empty() ? " (no `p` line names one)" : " (its pools: " + known + ")"));
    }
    if (quotas.contains(name)) {
      throw ConfigError("--quota " + name + ": given twice");
    }
    std::uint64_t quota = 0;
    try {
      quota = parse_size(text.substr(equals + 1));
    } catch (const ConfigError& error) {
      throw ConfigError("--quota " + name + ": " + error.what());
    }
    if (quota == 0) {
      throw ConfigError("--quota " + name +
                        "=0: a quota of 0 is none; leave the pool out of "
                        "--quota for no quota");
    }
    quotas[name] = quota;
  }
  return quotas;
}

void add_quota_option(CLI::App& command, std::vector<std::string>& quotas) {
  command.add_option("--quota", quotas,
                     "a pool's quota, NAME=SIZE (repeatable; pools are the trace's `p` lines; "
                     "over the quota a `p` line gives; under the static strategy it is the "
                     "pool's arena)");
}

void check_writable(const std::string& path, const std::string& what) {
  const auto refuse = [&](const char* reason) {
    throw Error("cannot write " + what + " " + path + ": " + reason);
  };
  std::error_code error;
  if (std::filesystem::exists(path, error)) {
    std::ofstream out(path, std::ios::binary | std::ios::app);  // app: nothing is truncated
    if (!out) refuse(std::strerror(errno));
    return;
  }
  // Nothing is created to check a new file (through a dangling link, that lost the link).
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  const std::filesystem::path folder = absolute.parent_path();
  if (!std::filesystem::is_directory(folder, error)) refuse(std::strerror(ENOENT));
  if (::access(folder.c_str(), W_OK | X_OK) != 0) refuse(std::strerror(errno));
}

void check_outputs_apart(const std::vector<std::pair<std::string, std::string>>& inputs,
                         const std::vector<std::pair<std::string, std::string>>& outputs) {
  // Paths as they would be opened: "x" and "./x" are one file, also before it exists.
  const auto file = [](const std::string& path) {
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
    return error ? std::filesystem::path(path).lexically_normal() : resolved;
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [name, path] = outputs[i];
    if (path.empty()) continue;
    std::vector<std::pair<std::string, std::string>> others = inputs;
    others.insert(others.end(), outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(i));
    for (const auto& [other_name, other_path] : others) {
      if (!other_path.empty() && file(path) == file(other_path)) {
        throw ConfigError(name + " " + path + " is the file of " + other_name +
                          ": writing it would destroy what that holds");
      }
    }
  }
}

CLI::Validator nonnegative_check() {
  return sign_check("NONNEGATIVE", "negative", [](double value) { return value >= 0.0; });
}

CLI::Validator positive_check() {
  return sign_check("POSITIVE", "not positive", [](double value) { return value > 0.0; });
}

CLI::Validator seconds_check(double least, double most) {
  return validator("SECONDS", [least, most](const std::string& text) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g seconds", least, most);
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || std::isnan(value)) {
      return text + " is not a number of seconds (" + range + ")";
    }
    return value >= least && value <= most ? std::string() : text + " is outside " + range;
  });
}

}  // namespace npumem::cli
