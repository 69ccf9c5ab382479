// Current and peak allocated/reserved bytes read out of a Stats, per tier or in all.
#pragma once

#include "npumem/monitor.h"
#include "npumem/stats.h"

namespace npumem::observe {

TierUsage total_usage(const Stats& stats);
TierUsage tier_usage(const Stats& stats, Tier tier);

}  // namespace npumem::observe
