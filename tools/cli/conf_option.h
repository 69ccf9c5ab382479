// The --conf option of replay and compare: settings over NPUMEM_ALLOC_CONF.
#pragma once

#include <string>

#include "npumem/config.h"

namespace npumem::cli {

// NPUMEM_ALLOC_CONF, then `conf` over it. A bad setting throws ConfigError naming
// where it came from (--conf or NPUMEM_ALLOC_CONF).
Config config_from_conf_option(const std::string& conf);

}  // namespace npumem::cli
