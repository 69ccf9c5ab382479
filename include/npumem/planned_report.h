// The planned strategy's account in words, one text for every report that shows it
// (npumem replay and compare, python3 -m npumem.torch run, npumem.planned_report()):
// what the plans did, the steady overhead or why no plan served, and each plan, with why
// it was declined. `marks` names how the run marks iterations ("`i` lines",
// "optimizer.step() or npumem.torch.iteration()"), for the reason no plan served.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "npumem/allocator.h"

namespace npumem {

struct ReportLine {
  std::string name;
  std::string value;
};

// Why no plan served an iteration; empty when one did.
std::string why_no_plan_served(const PlannedStats& stats, std::string_view marks);

std::vector<ReportLine> planned_report_lines(const PlannedStats& stats, std::string_view marks);

// The lines as "  name  value", the values in one column.
std::string planned_report(const PlannedStats& stats, std::string_view marks);

}  // namespace npumem
