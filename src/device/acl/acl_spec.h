// The settings of an Ascend NPU device, read from "acl", "acl:N" or
// "acl:N,key=value,..." (keys in docs/ASCEND.md).
#pragma once

#include <cstdint>
#include <string_view>

namespace npumem {

struct AclSpec {
  int ordinal = 0;  // the NPU's device id (aclrtSetDevice)
  // Caps on the bytes npumem takes per tier (0: what aclrtGetMemInfo reports).
  std::uint64_t hbm_limit = 0;
  std::uint64_t ddr_limit = 0;
  bool ddr = true;             // ddr=0 leaves out the DDR tier even where the chip has one
  bool virtual_memory = true;  // vmm=auto uses the VMM calls where CANN has them; vmm=off never
};

// Throws ConfigError naming the spec, the bad key or value and the accepted ones.
AclSpec parse_acl_spec(std::string_view text);

}  // namespace npumem
