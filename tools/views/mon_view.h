// What `npumem mon` draws: per-device tier bars with a sparkline of recent use on a
// terminal, or one line per refresh when the output is not a terminal.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "smi_view.h"

namespace npumem::cli {

// "[#######.......]": `fraction` (clamped to 0..1) of `width` cells filled.
std::string usage_bar(double fraction, std::size_t width);
// One block character (▁..█) per value, scaled to 0..1.
std::string sparkline(const std::deque<double>& fractions);

// The utilisation of each device tier over the last samples (by device name, tier and
// the device's capacities -> values).
class UsageHistory {
 public:
  explicit UsageHistory(std::size_t max_samples) : max_samples_(max_samples) {}
  void add(const std::vector<DeviceView>& devices);
  const std::deque<double>& of(const DeviceView& device, Tier tier) const;

 private:
  std::size_t max_samples_;
  std::map<std::string, std::deque<double>> samples_;
};

// The terminal screen: a header, then per device and tier a bar, the figures and a
// sparkline of the history, then the processes.
std::string mon_screen(const std::vector<DeviceView>& devices, const UsageHistory& history,
                       const std::string& now, double interval_seconds);
// One line: time, then per device and tier used/total and utilisation.
std::string mon_line(const std::vector<DeviceView>& devices, const std::string& now);

}  // namespace npumem::cli
