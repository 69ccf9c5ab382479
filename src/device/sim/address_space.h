// Unique, non-overlapping addresses without pages, for the virtual NPU's backing
// "none": carved best-fit from large PROT_NONE arenas, which grow on demand, so a
// 192 GiB device fits on a machine with far less memory and uses one mapping per arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace npumem {

class AddressSpace {
 public:
  // Every range handed out is aligned to `alignment` (a power of two) and sizes are
  // multiples of it; arenas are at least `arena_bytes`.
  AddressSpace(std::size_t alignment, std::size_t arena_bytes);
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // A free range of `bytes`, or nullptr when the system refuses more address space.
  void* take(std::size_t bytes);
  // Returns a range that take() handed out.
  void give_back(void* addr, std::size_t bytes);

  std::size_t arena_count() const { return arenas_.size(); }
  std::uint64_t free_bytes() const;

 private:
  bool add_arena(std::size_t min_bytes);
  void insert_free(std::uintptr_t start, std::size_t bytes);
  void erase_free(std::map<std::uintptr_t, std::size_t>::iterator range);

  std::size_t alignment_;
  std::size_t arena_bytes_;
  std::vector<std::pair<void*, std::size_t>> arenas_;
  std::map<std::uintptr_t, std::size_t> free_by_address_;
  std::set<std::pair<std::size_t, std::uintptr_t>> free_by_size_;  // best fit: smallest first
};

}  // namespace npumem
