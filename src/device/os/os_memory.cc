#include "os_memory.h"

#include <sys/mman.h>
#include <unistd.h>

namespace npumem::os {
namespace {

constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

std::uintptr_t address(void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr);
}

std::uintptr_t align_up(std::uintptr_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~(static_cast<std::uintptr_t>(alignment) - 1);
}

// Unmaps [from, to) when it is not empty: trims the slack of an over-sized reservation.
void trim(std::uintptr_t from, std::uintptr_t to) {
  if (to > from) munmap(reinterpret_cast<void*>(from), to - from);
}

}  // namespace

void* reserve(std::size_t bytes, std::size_t alignment) {
  const std::size_t slack = alignment > page_size() ? alignment : 0;
  void* raw = mmap(nullptr, bytes + slack, PROT_NONE, kReserveFlags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  if (slack == 0) return raw;
  const std::uintptr_t start = address(raw);
  const std::uintptr_t aligned = align_up(start, alignment);
  trim(start, aligned);
  trim(aligned + bytes, start + bytes + slack);
  return reinterpret_cast<void*>(aligned);
}

void* map_anonymous(std::size_t bytes) {
  void* ptr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kReserveFlags, -1, 0);
  return ptr == MAP_FAILED ? nullptr : ptr;
}

void release(void* addr, std::size_t bytes) {
  munmap(addr, bytes);
}

int create_shared(std::size_t bytes) {
  const int fd = memfd_create("npumem-chunk", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void close_shared(int fd) {
  close(fd);
}

bool map_shared_fixed(void* addr, std::size_t bytes, int fd) {
  void* ptr = mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  return ptr != MAP_FAILED;
}

bool rereserve(void* addr, std::size_t bytes) {
  void* ptr = mmap(addr, bytes, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
  return ptr != MAP_FAILED;
}

std::size_t page_size() {
  static const std::size_t kPageSize = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return kPageSize;
}

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<std::uint64_t>(pages) * page_size() : 0;
}

}  // namespace npumem::os
