#include "address_space.h"

#include <algorithm>
#include <iterator>

#include "device/os/os_memory.h"

namespace npumem {

AddressSpace::AddressSpace(std::size_t alignment, std::size_t arena_bytes)
    : alignment_(alignment), arena_bytes_(arena_bytes) {}

AddressSpace::~AddressSpace() {
  for (const auto& [base, bytes] : arenas_) os::release(base, bytes);
}

void* AddressSpace::take(std::size_t bytes) {
  auto fit = free_by_size_.lower_bound({bytes, 0});
  if (fit == free_by_size_.end()) {
    if (!add_arena(bytes)) return nullptr;
    fit = free_by_size_.lower_bound({bytes, 0});
  }
  const auto [size, start] = *fit;
  erase_free(free_by_address_.find(start));
  if (size > bytes) insert_free(start + bytes, size - bytes);
  return reinterpret_cast<void*>(start);
}

// Coalesces with the free neighbours on both sides.
void AddressSpace::give_back(void* addr, std::size_t bytes) {
  std::uintptr_t start = reinterpret_cast<std::uintptr_t>(addr);
  std::size_t size = bytes;
  auto next = free_by_address_.lower_bound(start);
  if (next != free_by_address_.end() && next->first == start + size) {
    size += next->second;
    next = std::next(next);
    erase_free(std::prev(next));
  }
  if (next != free_by_address_.begin()) {
    const auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      start = previous->first;
      size += previous->second;
      erase_free(previous);
    }
  }
  insert_free(start, size);
}

std::uint64_t AddressSpace::free_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [start, bytes] : free_by_address_) total += bytes;
  return total;
}

bool AddressSpace::add_arena(std::size_t min_bytes) {
  const std::size_t bytes = std::max(min_bytes, arena_bytes_);
  void* base = os::reserve(bytes, alignment_);
  if (base == nullptr) return false;
  arenas_.emplace_back(base, bytes);
  insert_free(reinterpret_cast<std::uintptr_t>(base), bytes);
  return true;
}

void AddressSpace::insert_free(std::uintptr_t start, std::size_t bytes) {
  free_by_address_.emplace(start, bytes);
  free_by_size_.emplace(bytes, start);
}

void AddressSpace::erase_free(std::map<std::uintptr_t, std::size_t>::iterator range) {
  free_by_size_.erase({range->second, range->first});
  free_by_address_.erase(range);
}

}  // namespace npumem
