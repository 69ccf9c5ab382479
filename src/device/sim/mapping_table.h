// The bookkeeping of the virtual-memory calls: which address ranges are reserved and
// which granules in them are mapped to which physical chunk. Pure data, no OS calls,
// so the same checks guard host-backed and page-less devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace npumem {

class MappingTable {
 public:
  void add_reservation(std::uintptr_t base, std::size_t bytes);
  // Removes the reservation that is exactly [base, base + bytes) and every mapping in
  // it; false when there is no such reservation.
  bool remove_reservation(std::uintptr_t base, std::size_t bytes);

  // Whether [addr, addr + bytes) lies inside one reservation and overlaps no mapping.
  bool can_map(std::uintptr_t addr, std::size_t bytes) const;
  void add_mapping(std::uintptr_t addr, std::size_t bytes, std::uint64_t chunk);
  // Removes the mappings in [addr, addr + bytes); false (and nothing removed) when the
  // range is not inside one reservation or would cut a mapping in two.
  bool remove_mappings(std::uintptr_t addr, std::size_t bytes);

  // The chunk mapped at exactly addr, or 0.
  std::uint64_t chunk_at(std::uintptr_t addr) const;
  const std::map<std::uintptr_t, std::size_t>& reservations() const { return reservations_; }
  std::size_t mapping_count() const { return mappings_.size(); }

 private:
  struct Mapping {
    std::size_t bytes;
    std::uint64_t chunk;
  };

  bool inside_reservation(std::uintptr_t addr, std::size_t bytes) const;
  // The mapping that starts before addr and reaches past it, if any.
  bool straddles(std::uintptr_t addr) const;

  std::map<std::uintptr_t, std::size_t> reservations_;  // base -> bytes
  std::map<std::uintptr_t, Mapping> mappings_;          // address -> mapping
};

}  // namespace npumem
