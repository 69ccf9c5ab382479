// The plain-function interface npumem._core hands to npumem._torch in a capsule.
// _torch calls the one copy of npumem that lives in _core (its device registry,
// thread-local pool scopes and memory tags) instead of linking a second copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace npumem::python {

inline constexpr const char* kAllocatorBridgeCapsule = "npumem._core.AllocatorBridge";
inline constexpr std::uint32_t kAllocatorBridgeVersion = 2;

struct AllocatorBridge {
  std::uint32_t version = kAllocatorBridgeVersion;
  // The device's entry in _core's registry (passed back to the functions below); it
  // lives until the process ends.
  void* allocator = nullptr;
  // Returns the memory, or nullptr with the explanation in *error; *out_of_memory
  // tells an out-of-memory failure from others. Thread safe; needs no Python lock.
  void* (*allocate)(void* allocator, std::size_t bytes, std::string* error,
                    bool* out_of_memory) = nullptr;
  // Returns false with the explanation in *error for a pointer the allocator does
  // not hold. Thread safe; needs no Python lock.
  bool (*deallocate)(void* allocator, void* ptr, std::string* error) = nullptr;
  // Whether ptr is a live allocation of this allocator (frees find their device by it).
  bool (*owns)(void* allocator, const void* ptr) = nullptr;
  // The requested bytes of a live allocation (0 for a pointer it does not hold).
  std::size_t (*allocation_size)(void* allocator, const void* ptr) = nullptr;
  // Current allocated and reserved bytes, as the PyTorch profiler wants them.
  void (*totals)(void* allocator, std::int64_t* allocated, std::int64_t* reserved) = nullptr;
};

inline constexpr const char* kScopeBridgeCapsule = "npumem._core.ScopeBridge";
inline constexpr std::uint32_t kScopeBridgeVersion = 3;

// What _torch reads of _core's thread-local scopes whatever the device, installed or not.
struct ScopeBridge {
  std::uint32_t version = kScopeBridgeVersion;
  // The pool this thread's innermost npumem.pool() scope routes to ("default" outside)
  // and its quota in bytes (0: none).
  void (*current_pool)(std::string* name, std::uint64_t* quota_bytes) = nullptr;
  // This thread's memory tag (npumem.tag(), npumem.torch.tag_modules()); "" when none.
  void (*current_tag)(std::string* tag) = nullptr;
};

}  // namespace npumem::python
