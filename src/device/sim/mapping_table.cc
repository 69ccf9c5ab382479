#include "mapping_table.h"

#include <iterator>

namespace npumem {

void MappingTable::add_reservation(std::uintptr_t base, std::size_t bytes) {
  reservations_.emplace(base, bytes);
}

bool MappingTable::remove_reservation(std::uintptr_t base, std::size_t bytes) {
  const auto reservation = reservations_.find(base);
  if (reservation == reservations_.end() || reservation->second != bytes) return false;
  reservations_.erase(reservation);
  mappings_.erase(mappings_.lower_bound(base), mappings_.lower_bound(base + bytes));
  return true;
}

bool MappingTable::can_map(std::uintptr_t addr, std::size_t bytes) const {
  if (!inside_reservation(addr, bytes)) return false;
  const auto after = mappings_.lower_bound(addr + bytes);
  if (after == mappings_.begin()) return true;
  const auto last_before_end = std::prev(after);
  return last_before_end->first + last_before_end->second.bytes <= addr;
}

void MappingTable::add_mapping(std::uintptr_t addr, std::size_t bytes, std::uint64_t chunk) {
  mappings_.emplace(addr, Mapping{bytes, chunk});
}

bool MappingTable::remove_mappings(std::uintptr_t addr, std::size_t bytes) {
  if (!inside_reservation(addr, bytes) || straddles(addr) || straddles(addr + bytes)) {
    return false;
  }
  mappings_.erase(mappings_.lower_bound(addr), mappings_.lower_bound(addr + bytes));
  return true;
}

std::uint64_t MappingTable::chunk_at(std::uintptr_t addr) const {
  const auto mapping = mappings_.find(addr);
  return mapping == mappings_.end() ? 0 : mapping->second.chunk;
}

bool MappingTable::inside_reservation(std::uintptr_t addr, std::size_t bytes) const {
  auto reservation = reservations_.upper_bound(addr);
  if (bytes == 0 || reservation == reservations_.begin()) return false;
  reservation = std::prev(reservation);
  const std::uintptr_t end = reservation->first + reservation->second;
  return addr < end && bytes <= end - addr;
}

bool MappingTable::straddles(std::uintptr_t addr) const {
  const auto after = mappings_.lower_bound(addr);
  if (after == mappings_.begin()) return false;
  const auto before = std::prev(after);
  return before->first + before->second.bytes > addr;
}

}  // namespace npumem
