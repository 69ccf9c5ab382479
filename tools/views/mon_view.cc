#include "mon_view.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

#include "npumem/units.h"

namespace npumem::cli {
namespace {

constexpr std::size_t kBarWidth = 30;
constexpr std::array<const char*, 8> kBlocks = {"\u2581", "\u2582", "\u2583", "\u2584",
                                                "\u2585", "\u2586", "\u2587", "\u2588"};

// A device is its name and its tiers' capacities, as smi groups them: two processes'
// sim:0 of other sizes are two devices (keyed by name, their samples interleaved).
std::string key(const DeviceView& device, Tier tier) {
  std::string text = device.name + "/" + std::string(tier_name(tier));
  for (const TierView& each : device.tiers) text += "/" + std::to_string(each.total_bytes);
  return text;
}

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%5.1f%%", fraction * 100.0);
  return text;
}

}  // namespace

std::string usage_bar(double fraction, std::size_t width) {
  const double clamped = std::clamp(fraction, 0.0, 1.0);
  const auto filled = static_cast<std::size_t>(clamped * static_cast<double>(width) + 0.5);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

std::string sparkline(const std::deque<double>& fractions) {
  std::string line;
  for (const double fraction : fractions) {
    const double clamped = std::clamp(fraction, 0.0, 1.0);
    line +=
        kBlocks[static_cast<std::size_t>(clamped * static_cast<double>(kBlocks.size() - 1) + 0.5)];
  }
  return line;
}

void UsageHistory::add(const std::vector<DeviceView>& devices) {
  for (const DeviceView& device : devices) {
    for (const TierView& tier : device.tiers) {
      if (!tier.present) continue;
      std::deque<double>& samples = samples_[key(device, tier.tier)];
      samples.push_back(tier.utilization);
      while (samples.size() > max_samples_) samples.pop_front();
    }
  }
}

const std::deque<double>& UsageHistory::of(const DeviceView& device, Tier tier) const {
  static const std::deque<double> kNone;
  const auto found = samples_.find(key(device, tier));
  return found == samples_.end() ? kNone : found->second;
}

std::string mon_screen(const std::vector<DeviceView>& devices, const UsageHistory& history,
                       const std::string& now, double interval_seconds) {
  std::ostringstream out;
  char line[256];
  out << "npumem mon   " << now << "   every " << interval_seconds << " s   (Ctrl-C to quit)\n\n";
  if (devices.empty()) out << "no process is using npumem\n";
  for (const DeviceView& device : devices) {
    out << "device " << device.id << "  " << device.name << "   processes "
        << device.processes.size() << "   OOMs " << device.num_ooms << "\n";
    for (const TierView& tier : device.tiers) {
      if (!tier.present) continue;
      std::snprintf(line, sizeof line, "  %-4s %s %s  %10s / %-10s  ",
                    std::string(tier_name(tier.tier)).c_str(),
                    usage_bar(tier.utilization, kBarWidth).c_str(),
                    percent(tier.utilization).c_str(), format_bytes(tier.used_bytes).c_str(),
                    format_bytes(tier.total_bytes).c_str());
      out << line << sparkline(history.of(device, tier.tier)) << "\n";
    }
    for (const ProcessView& process : device.processes) {
      std::snprintf(line, sizeof line,
                    "    pid %-8d %-16s reserved %10s  allocated %10s  peak %10s\n", process.pid,
                    process.name.c_str(), format_bytes(process.reserved_bytes).c_str(),
                    format_bytes(process.allocated_bytes).c_str(),
                    format_bytes(process.peak_allocated_bytes).c_str());
      out << line;
      if (!process.has_named_pools()) continue;  // the default pool alone: the process's row
      for (const PublishedPool& pool : process.pools) {
        std::snprintf(line, sizeof line,
                      "      pool %-22s reserved %10s  allocated %10s  peak %10s  quota %s\n",
                      pool.name.c_str(), format_bytes(pool.reserved_bytes).c_str(),
                      format_bytes(pool.allocated_bytes).c_str(),
                      format_bytes(pool.peak_allocated_bytes).c_str(),
                      quota_text(pool.quota_bytes).c_str());
        out << line;
      }
      if (process.pools_not_shown() != 0) {
        out << "      " << process.pools_not_shown() << " more pools\n";
      }
    }
    out << "\n";
  }
  return out.str();
}

std::string mon_line(const std::vector<DeviceView>& devices, const std::string& now) {
  std::ostringstream out;
  out << now;
  if (devices.empty()) out << "  no process is using npumem";
  for (const DeviceView& device : devices) {
    out << "  device " << device.id << " " << device.name << " procs " << device.processes.size();
    for (const TierView& tier : device.tiers) {
      if (!tier.present) continue;
      out << " " << tier_name(tier.tier) << " " << format_bytes(tier.used_bytes) << "/"
          << format_bytes(tier.total_bytes) << " " << percent(tier.utilization);
    }
  }
  out << "\n";
  return out.str();
}

}  // namespace npumem::cli
