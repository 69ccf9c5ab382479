#include "conf_option.h"

#include "npumem/errors.h"

namespace npumem::cli {

Config config_from_conf_option(const std::string& conf) {
  const Config base = config_from_environment();
  try {
    return parse_config(conf, base);
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("--conf: ") + error.what());
  }
}

}  // namespace npumem::cli
