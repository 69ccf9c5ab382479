// What `npumem smi` shows: the stats pages of every process using npumem, grouped
// by device (as npu-smi and nvidia-smi show devices with their processes), as a
// table, as the detail of one device, or as JSON.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npumem/stats_page.h"

namespace npumem::cli {

struct TierView {
  Tier tier = Tier::hbm;
  bool present = false;
  std::uint64_t total_bytes = 0;      // the tier's capacity
  std::uint64_t used_bytes = 0;       // reserved by every process
  std::uint64_t allocated_bytes = 0;  // handed out by every process
  std::uint64_t free_bytes = 0;
  double utilization = 0.0;  // used / total
};

struct ProcessView {
  int pid = 0;
  std::string name;
  std::array<PublishedTier, kTierCount> tiers;
  std::uint64_t reserved_bytes = 0;  // every tier
  std::uint64_t allocated_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;  // of all tiers together
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t num_ooms = 0;
  std::vector<PublishedPool> pools;  // "default" first; as many as its page holds
  std::uint64_t pool_count = 0;      // all it has

  // Named pools (models) beside the default one: its pools are shown under it.
  bool has_named_pools() const { return pool_count > 1; }
  // The pools its page had no room for.
  std::uint64_t pools_not_shown() const { return pool_count - pools.size(); }
};

// A pool's quota as the views show it: its size, or "none".
std::string quota_text(std::uint64_t quota_bytes);

struct DeviceView {
  int id = 0;  // position in name order
  std::string name;
  std::array<TierView, kTierCount> tiers;
  std::vector<ProcessView> processes;  // by pid
  std::uint64_t num_ooms = 0;
};

// Devices by name, each with its processes.
std::vector<DeviceView> device_views(const std::vector<ProcessStats>& processes);

// The npu-smi-like table: devices with their tiers, then the process table.
// `now` heads it (e.g. "2026-11-29 17:03:04").
std::string smi_table(const std::vector<DeviceView>& devices, const std::string& now);
// `npumem smi -t memory -i ID`: one device's memory in detail.
std::string smi_memory_detail(const DeviceView& device);
nlohmann::json smi_json(const std::vector<DeviceView>& devices);

// The device with this id; throws Error naming the ids there are.
const DeviceView& device_by_id(const std::vector<DeviceView>& devices, int id);

// Local time as "YYYY-MM-DD HH:MM:SS".
std::string local_time_text();

}  // namespace npumem::cli
