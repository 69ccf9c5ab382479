// Events the allocator reports to observers (history recording, hooks, leak
// detection). Observers are called in event order under the allocator's lock, so
// they must be quick and must not call back into the allocator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "npumem/device.h"

namespace npumem {

enum class EventKind : std::uint8_t {
  alloc,          // a block handed out
  free,           // a block returned
  segment_alloc,  // memory obtained from the device (segment, or granules mapped)
  segment_free,   // memory returned to the device
  map,            // physical granules mapped into a VA range (expandable)
  unmap,          // physical granules unmapped (expandable)
  spill,          // an allocation served by DDR because HBM could not
  reclaim,        // cached memory released to satisfy a request
  oom,            // an allocation failed
  iteration,      // the caller marked the start of an iteration (Allocator::mark_iteration)
};

std::string_view event_kind_name(EventKind kind);

struct Event {
  EventKind kind = EventKind::alloc;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;            // block, segment or released bytes
  std::uint64_t requested_bytes = 0;  // alloc/free/oom: what the caller asked for
  Tier tier = Tier::hbm;
  std::string_view pool;  // pool name
  std::string_view tag;   // the caller's thread-local tag at allocation time
};

class AllocatorObserver {
 public:
  virtual ~AllocatorObserver() = default;
  virtual void on_event(const Event& event) = 0;
};

// Thread-local tag attached to blocks allocated by this thread (like PyTorch's
// _set_memory_metadata). Empty by default.
void set_memory_tag(std::string_view tag);
std::string_view memory_tag();

class ScopedMemoryTag {
 public:
  explicit ScopedMemoryTag(std::string_view tag);
  ~ScopedMemoryTag();
  ScopedMemoryTag(const ScopedMemoryTag&) = delete;
  ScopedMemoryTag& operator=(const ScopedMemoryTag&) = delete;

 private:
  std::string previous_;
};

}  // namespace npumem
