// The allocator's snapshot (segments, blocks, pools) and stats as one JSON document,
// with the field names of SegmentInfo, BlockInfo, PoolInfo and Stats::as_map().
// The schema is in docs/C_API.md.
#pragma once

#include <string>

#include "npumem/allocator.h"

namespace npumem::capi {

std::string snapshot_json(const Allocator& allocator);

}  // namespace npumem::capi
