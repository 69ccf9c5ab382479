#include "smi_view.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {
namespace {

constexpr int kTableWidth = 92;

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100.0);
  return text;
}

std::string cell(const std::string& text, int width, bool right = false) {
  char out[256];
  std::snprintf(out, sizeof out, right ? " %*s |" : " %-*s |", width - 2, text.c_str());
  return out;
}

std::string rule(const std::vector<int>& widths, char c) {
  std::string line = "+";
  for (const int width : widths) line += std::string(static_cast<std::size_t>(width), c) + "+";
  return line + "\n";
}

ProcessView process_view(const ProcessStats& process, const PublishedDevice& device) {
  ProcessView view{process.pid,
                   process.process_name,
                   device.tiers,
                   0,
                   0,
                   device.peak_allocated_bytes,
                   device.peak_reserved_bytes,
                   device.num_ooms,
                   device.pools,
                   device.pool_count};
  for (const PublishedTier& tier : device.tiers) {
    view.reserved_bytes += tier.reserved_bytes;
    view.allocated_bytes += tier.allocated_bytes;
  }
  return view;
}

void add_process(DeviceView& device, const ProcessView& process) {
  for (std::size_t t = 0; t < kTierCount; ++t) {
    const PublishedTier& published = process.tiers[t];
    TierView& tier = device.tiers[t];
    tier.tier = published.tier;
    tier.present = tier.present || published.present;
    tier.total_bytes = std::max(tier.total_bytes, published.capacity_bytes);
    tier.used_bytes += published.reserved_bytes;
    tier.allocated_bytes += published.allocated_bytes;
  }
  device.num_ooms += process.num_ooms;
  device.processes.push_back(process);
}

void finish_tiers(DeviceView& device) {
  for (TierView& tier : device.tiers) {
    tier.free_bytes = tier.total_bytes > tier.used_bytes ? tier.total_bytes - tier.used_bytes : 0;
    tier.utilization = tier.total_bytes == 0 ? 0.0
                                             : static_cast<double>(tier.used_bytes) /
                                                   static_cast<double>(tier.total_bytes);
  }
}

nlohmann::json tier_json(const TierView& tier) {
  return {{"tier", tier_name(tier.tier)},
          {"present", tier.present},
          {"total_bytes", tier.total_bytes},
          {"used_bytes", tier.used_bytes},
          {"allocated_bytes", tier.allocated_bytes},
          {"free_bytes", tier.free_bytes},
          {"utilization", tier.utilization}};
}

nlohmann::json process_json(const ProcessView& process) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const PublishedTier& tier : process.tiers) {
    if (!tier.present) continue;
    tiers.push_back({{"tier", tier_name(tier.tier)},
                     {"reserved_bytes", tier.reserved_bytes},
                     {"allocated_bytes", tier.allocated_bytes},
                     {"peak_reserved_bytes", tier.peak_reserved_bytes},
                     {"peak_allocated_bytes", tier.peak_allocated_bytes}});
  }
  nlohmann::json pools = nlohmann::json::array();
  for (const PublishedPool& pool : process.pools) {
    pools.push_back({{"name", pool.name},
                     {"quota_bytes", pool.quota_bytes},
                     {"reserved_bytes", pool.reserved_bytes},
                     {"allocated_bytes", pool.allocated_bytes},
                     {"peak_allocated_bytes", pool.peak_allocated_bytes}});
  }
  return {{"pid", process.pid},
          {"name", process.name},
          {"pool_count", process.pool_count},
          {"pools", pools},
          {"reserved_bytes", process.reserved_bytes},
          {"allocated_bytes", process.allocated_bytes},
          {"peak_allocated_bytes", process.peak_allocated_bytes},
          {"peak_reserved_bytes", process.peak_reserved_bytes},
          {"num_ooms", process.num_ooms},
          {"tiers", tiers}};
}

std::string device_rows(const DeviceView& device, const std::vector<int>& widths) {
  std::string rows;
  bool first = true;
  for (const TierView& tier : device.tiers) {
    if (!tier.present) continue;
    rows += "|" + cell(first ? std::to_string(device.id) : "", widths[0]) +
            cell(first ? device.name : "", widths[1]) +
            cell(std::string(tier_name(tier.tier)), widths[2]) +
            cell(format_bytes(tier.total_bytes), widths[3], true) +
            cell(format_bytes(tier.used_bytes), widths[4], true) +
            cell(format_bytes(tier.free_bytes), widths[5], true) +
            cell(percent(tier.utilization), widths[6], true) + "\n";
    first = false;
  }
  return rows;
}

// `text` cut to `bytes` at most, never inside a UTF-8 character, and then ending in
// "..." ("python3 bg_install." read as a whole name).
std::string fitted(std::string text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t end = bytes > 3 ? bytes - 3 : 0;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

// Under a process's row, a row per pool, and one for those its page had no room for.
std::string pool_rows(const ProcessView& process, const std::vector<int>& widths) {
  if (!process.has_named_pools()) return {};
  const std::string indent = "|" + cell("", widths[0]) + cell("", widths[1]);
  const auto text_width = static_cast<std::size_t>(widths[2] - 2);
  std::string rows;
  for (const PublishedPool& pool : process.pools) {
    rows += indent + cell(fitted(" pool " + pool.name, text_width), widths[2]) +
            cell(format_bytes(pool.reserved_bytes), widths[3], true) +
            cell(format_bytes(pool.allocated_bytes), widths[4], true) +
            cell(format_bytes(pool.peak_allocated_bytes), widths[5], true) + "\n";
  }
  if (process.pools_not_shown() != 0) {
    const std::string more = " " + std::to_string(process.pools_not_shown()) +
                             " more pools (npumem.pools() / npumem_pool_info in the process)";
    // One cell across the pool rows' four: their widths and three inner borders, less its own.
    const int width = widths[2] + widths[3] + widths[4] + widths[5] + 3;
    rows += indent + cell(fitted(more, static_cast<std::size_t>(width - 2)), width) + "\n";
  }
  return rows;
}

std::string process_table(const std::vector<DeviceView>& devices) {
  const std::vector<int> widths = {7, 10, 21, 15, 16, 16};  // as wide as kTableWidth
  std::string table = rule(widths, '-') + "|" + cell("ID", widths[0]) + cell("PID", widths[1]) +
                      cell("Process name", widths[2]) + cell("Reserved", widths[3], true) +
                      cell("Allocated", widths[4], true) + cell("Peak", widths[5], true) + "\n" +
                      rule(widths, '=');
  bool any = false;
  for (const DeviceView& device : devices) {
    for (const ProcessView& process : device.processes) {
      table += "|" + cell(std::to_string(device.id), widths[0]) +
               cell(std::to_string(process.pid), widths[1]) +
               cell(fitted(process.name, static_cast<std::size_t>(widths[2] - 2)), widths[2]) +
               cell(format_bytes(process.reserved_bytes), widths[3], true) +
               cell(format_bytes(process.allocated_bytes), widths[4], true) +
               cell(format_bytes(process.peak_allocated_bytes), widths[5], true) + "\n" +
               pool_rows(process, widths);
      any = true;
    }
  }
  if (!any) {
    char line[128];
    std::snprintf(line, sizeof line, "| %-*s |\n", kTableWidth - 4, "No running processes found");
    table += line;
  }
  return table + rule(widths, '-');
}

// A device is its name and its tiers' capacities: two processes' virtual NPUs of one
// name are each their own, unless made alike; a real device's capacities are the same
// in every process that uses it.
using DeviceKey = std::pair<std::string, std::array<std::uint64_t, kTierCount>>;

DeviceKey device_key(const PublishedDevice& device) {
  DeviceKey key{device.name, {}};
  for (std::size_t t = 0; t < kTierCount; ++t) {
    key.second[t] = device.tiers[t].present ? device.tiers[t].capacity_bytes : 0;
  }
  return key;
}

// Names in the order people count: digit runs by value, so sim:2 comes before sim:10 (in
// text order `smi -i 1` showed sim:10).
bool natural_less(std::string_view a, std::string_view b) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (!digit(a[i]) || !digit(b[j])) {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
      continue;
    }
    const std::size_t a_start = i;
    const std::size_t b_start = j;
    while (i < a.size() && digit(a[i])) ++i;
    while (j < b.size() && digit(b[j])) ++j;
    std::string_view x = a.substr(a_start, i - a_start);
    std::string_view y = b.substr(b_start, j - b_start);
    while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
    while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
    if (x.size() != y.size()) return x.size() < y.size();
    if (x != y) return x < y;
  }
  return a.size() - i < b.size() - j;
}

// Natural order, then text order, which tells sim:2 from sim:02 (equal by value: the
// map merged their devices).
struct DeviceOrder {
  bool operator()(const DeviceKey& a, const DeviceKey& b) const {
    if (natural_less(a.first, b.first)) return true;
    if (natural_less(b.first, a.first)) return false;
    return a < b;
  }
};

}  // namespace

std::string quota_text(std::uint64_t quota_bytes) {
  return quota_bytes == 0 ? "none" : format_bytes(quota_bytes);
}

std::vector<DeviceView> device_views(const std::vector<ProcessStats>& processes) {
  std::map<DeviceKey, DeviceView, DeviceOrder> by_key;
  for (const ProcessStats& process : processes) {
    for (const PublishedDevice& device : process.devices) {
      DeviceView& view = by_key[device_key(device)];
      view.name = device.name;
      add_process(view, process_view(process, device));
    }
  }
  std::vector<DeviceView> devices;
  for (auto& [key, view] : by_key) {
    view.id = static_cast<int>(devices.size());
    finish_tiers(view);
    std::sort(view.processes.begin(), view.processes.end(),
              [](const ProcessView& a, const ProcessView& b) { return a.pid < b.pid; });
    devices.push_back(std::move(view));
  }
  return devices;
}

std::string smi_table(const std::vector<DeviceView>& devices, const std::string& now) {
  const std::vector<int> widths = {7, 18, 6, 14, 14, 14, 11};  // as wide as kTableWidth
  char title[160];
  std::snprintf(title, sizeof title, "| %-*s%*s |\n", 40, "npumem-smi", kTableWidth - 44,
                now.c_str());
  std::string table = rule({kTableWidth - 2}, '-') + title + rule(widths, '-') + "|" +
                      cell("ID", widths[0]) + cell("Name", widths[1]) + cell("Tier", widths[2]) +
                      cell("Total", widths[3], true) + cell("Used", widths[4], true) +
                      cell("Free", widths[5], true) + cell("Util", widths[6], true) + "\n" +
                      rule(widths, '=');
  for (const DeviceView& device : devices) {
    table += device_rows(device, widths) + rule(widths, '-');
    const bool overfull =
        std::any_of(device.tiers.begin(), device.tiers.end(),
                    [](const TierView& t) { return t.used_bytes > t.total_bytes; });
    if (overfull) {
      // Virtual NPUs alike in several processes are one row, but each process's holds
      // the whole capacity: their sum passes it without an overcommit.
      char line[160];
      std::snprintf(line, sizeof line, "| %-*s |\n", kTableWidth - 4,
                    ("ID " + std::to_string(device.id) +
                     ": used passes total: " + std::to_string(device.processes.size()) +
                     " processes' virtual NPUs, each with this capacity of its own")
                        .c_str());
      table += line + rule(widths, '-');
    }
  }
  if (devices.empty()) {
    char line[128];
    std::snprintf(line, sizeof line, "| %-*s |\n", kTableWidth - 4, "No devices in use");
    table += line + rule(widths, '-');
  }
  return table + "\n" + process_table(devices);
}

std::string smi_memory_detail(const DeviceView& device) {
  std::ostringstream out;
  char line[160];
  const auto field = [&](int indent, const std::string& name, const std::string& value) {
    std::snprintf(line, sizeof line, "%*s%-*s : %s\n", indent, "", 32 - indent, name.c_str(),
                  value.c_str());
    out << line;
  };
  field(0, "NPU ID", std::to_string(device.id));
  field(0, "Name", device.name);
  field(0, "Processes", std::to_string(device.processes.size()));
  field(0, "OOMs", std::to_string(device.num_ooms));
  for (const TierView& tier : device.tiers) {
    if (!tier.present) continue;
    out << "Tier " << tier_name(tier.tier) << "\n";
    field(4, "Total", format_bytes(tier.total_bytes));
    field(4, "Used (reserved)", format_bytes(tier.used_bytes));
    field(4, "Allocated", format_bytes(tier.allocated_bytes));
    field(4, "Free", format_bytes(tier.free_bytes));
    field(4, "Utilization", percent(tier.utilization));
  }
  for (const ProcessView& process : device.processes) {
    out << "Process " << process.pid << " (" << process.name << ")\n";
    for (const PublishedTier& tier : process.tiers) {
      if (!tier.present) continue;
      field(4, std::string(tier_name(tier.tier)) + " reserved / peak",
            format_bytes(tier.reserved_bytes) + " / " + format_bytes(tier.peak_reserved_bytes));
      field(4, std::string(tier_name(tier.tier)) + " allocated / peak",
            format_bytes(tier.allocated_bytes) + " / " + format_bytes(tier.peak_allocated_bytes));
    }
    field(4, "OOMs", std::to_string(process.num_ooms));
    if (!process.has_named_pools()) continue;
    // A block per pool, as per tier: the name in the label pushed "default" rows' colons
    // past the others'.
    for (const PublishedPool& pool : process.pools) {
      out << "    Pool " << pool.name << "\n";
      field(8, "reserved / quota",
            format_bytes(pool.reserved_bytes) + " / " + quota_text(pool.quota_bytes));
      field(8, "allocated / peak",
            format_bytes(pool.allocated_bytes) + " / " + format_bytes(pool.peak_allocated_bytes));
    }
    if (process.pools_not_shown() != 0)
      field(4, "pools not on the page", std::to_string(process.pools_not_shown()));
  }
  return out.str();
}

nlohmann::json smi_json(const std::vector<DeviceView>& devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeviceView& device : devices) {
    nlohmann::json tiers = nlohmann::json::array();
    for (const TierView& tier : device.tiers) {
      if (tier.present) tiers.push_back(tier_json(tier));
    }
    nlohmann::json processes = nlohmann::json::array();
    for (const ProcessView& process : device.processes) processes.push_back(process_json(process));
    list.push_back({{"id", device.id},
                    {"name", device.name},
                    {"num_ooms", device.num_ooms},
                    {"tiers", tiers},
                    {"processes", processes}});
  }
  return {{"devices", list}};
}

const DeviceView& device_by_id(const std::vector<DeviceView>& devices, int id) {
  for (const DeviceView& device : devices) {
    if (device.id == id) return device;
  }
  throw Error("no device with id " + std::to_string(id) +
              (devices.empty() ? std::string(": no process is using npumem")
                               : " (ids 0.." + std::to_string(devices.size() - 1) + ")"));
}

std::string local_time_text() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

}  // namespace npumem::cli
