// Defaults of the device interface: devices without virtual memory answer
// not_supported, and copies follow the bandwidth model.
#include "npumem/device.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace npumem {

std::string_view tier_name(Tier tier) {
  switch (tier) {
    case Tier::hbm:
      return "hbm";
    case Tier::ddr:
      return "ddr";
  }
  return "unknown";
}

std::string_view status_name(DeviceStatus status) {
  switch (status) {
    case DeviceStatus::ok:
      return "ok";
    case DeviceStatus::out_of_memory:
      return "out_of_memory";
    case DeviceStatus::not_supported:
      return "not_supported";
    case DeviceStatus::invalid_argument:
      return "invalid_argument";
  }
  return "unknown";
}

DeviceStatus Device::reserve_address(std::size_t /*bytes*/, void** /*out*/) {
  return DeviceStatus::not_supported;
}

void Device::release_address(void* /*base*/, std::size_t /*bytes*/) {}

DeviceStatus Device::create_physical(Tier /*tier*/, std::size_t /*bytes*/,
                                     PhysicalHandle* /*out*/) {
  return DeviceStatus::not_supported;
}

void Device::release_physical(PhysicalHandle /*handle*/) {}

DeviceStatus Device::map(void* /*addr*/, PhysicalHandle /*handle*/) {
  return DeviceStatus::not_supported;
}

void Device::unmap(void* /*addr*/, std::size_t /*bytes*/) {}

DeviceStatus Device::record_event(StreamId /*stream*/, EventHandle* /*out*/) {
  return DeviceStatus::not_supported;
}

bool Device::event_completed(EventHandle /*event*/) {
  return true;
}

void Device::release_event(EventHandle /*event*/) {}

void Device::wait_event(EventHandle event) {
  while (!event_completed(event)) std::this_thread::yield();
}

// The slower of the two tiers bounds the transfer; a tier without a bandwidth figure
// (0) is not modelled and the transfer costs no time.
double Device::transfer_seconds(Tier from, Tier to, std::size_t bytes) const {
  const std::uint64_t bandwidth =
      std::min(tier_info(from).bandwidth_bytes_per_s, tier_info(to).bandwidth_bytes_per_s);
  if (bandwidth == 0) return 0.0;
  return static_cast<double>(bytes) / static_cast<double>(bandwidth);
}

double Device::copy(void* dst, Tier dst_tier, const void* src, Tier src_tier, std::size_t bytes) {
  if (bytes != 0 && dst != nullptr && src != nullptr) std::memmove(dst, src, bytes);
  return transfer_seconds(src_tier, dst_tier, bytes);
}

}  // namespace npumem
