// A c10 allocator that forwards to another and records every allocation and free
// with its exact requested size: the events of an allocation trace
// (`a <id> <bytes>` / `f <id>`, ids in allocation order from 0), and the iteration
// boundaries marked meanwhile (`i`).
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace npumem::python {

struct RecordedEvent {
  char kind = 'a';          // 'a' allocation, 'f' free, 'i' iteration boundary
  std::uint64_t id = 0;     // 'i': 1 when keyed
  std::uint64_t bytes = 0;  // 'a': requested bytes; 'i': the key
};

class RecordingAllocator final : public c10::Allocator {
 public:
  // Lives for the process: tensors it handed out may be freed at any time.
  static RecordingAllocator& instance();

  // Starts a fresh recording over `inner` (the allocator in use before). Allocations
  // made earlier are neither recorded nor their frees.
  void start(c10::Allocator* inner);
  // Stops and returns the events since start(); later frees are not recorded.
  std::vector<RecordedEvent> stop();
  bool recording() const;
  // Records an iteration boundary (an `i` line, `i <key>` with a key) when recording.
  void mark_iteration(std::optional<std::uint64_t> key);
  c10::Allocator* inner() const;

  // Zero bytes hold no memory and are passed through unrecorded.
  c10::DataPtr allocate(std::size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;

 private:
  RecordingAllocator() = default;
  static void free_recorded(void* ptr);

  struct Live {
    c10::DataPtr inner;
    std::uint64_t id = 0;
    std::uint64_t session = 0;  // the recording it was made in
  };

  mutable std::mutex mutex_;
  c10::Allocator* inner_ = nullptr;
  bool recording_ = false;
  std::uint64_t session_ = 0;
  mutable std::uint64_t next_id_ = 0;
  mutable std::vector<RecordedEvent> events_;
  mutable std::unordered_map<void*, Live> live_;
};

}  // namespace npumem::python
