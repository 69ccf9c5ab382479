// A c10 allocator that forwards to another and records every allocation and free
// with its exact requested size: the events of an allocation trace
// (`a <id> <bytes>` / `f <id>`, ids in allocation order from 0), the iteration
// boundaries marked meanwhile (`i`), and the pool and memory tag of each allocation's
// thread (`p <name>`, `t <tag>` where they change: npumem.pool(), npumem.tag()).
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "allocator_bridge.h"

namespace npumem::python {

struct RecordedEvent {
  // 'a' allocation, 'f' free, 'i' iteration boundary, 'p' pool, 'r' pool removed, 't' tag
  char kind = 'a';
  // 'i': 1 when keyed; 'p', 'r': the pool's index in Recorded::pools, 't' the tag's in tags.
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;  // 'a': requested bytes; 'i': the key; 'p': the pool's quota
};

struct Recorded {
  std::vector<RecordedEvent> events;
  std::vector<std::string> pools;  // the names 'p' events index
  std::vector<std::string> tags;   // the tags 't' events index ("" clears the tag)
};

class RecordingAllocator final : public c10::Allocator {
 public:
  // Lives for the process: tensors it handed out may be freed at any time.
  static RecordingAllocator& instance();

  // Starts a fresh recording over `inner` (the allocator in use before), reading each
  // allocation's pool through `scopes`. Allocations made earlier are neither recorded
  // nor their frees.
  void start(c10::Allocator* inner, const ScopeBridge& scopes);
  // Stops and returns the events since start(); later frees are not recorded.
  Recorded stop();
  bool recording() const;
  // Records an iteration boundary (an `i` line, `i <key>` with a key) when recording.
  void mark_iteration(std::optional<std::uint64_t> key);
  // The allocations of this recording in pool `name` still live: count and requested bytes.
  std::pair<std::size_t, std::uint64_t> live_in_pool(const std::string& name) const;
  // Records the removal of pool `name` (an `r` line) when recording; the next allocation
  // names its pool again, so one made anew under the name gets its own `p` line.
  void record_pool_removal(const std::string& name);
  c10::Allocator* inner() const;

  // Zero bytes hold no memory and are passed through unrecorded.
  c10::DataPtr allocate(std::size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;

 private:
  RecordingAllocator() = default;
  static void free_recorded(void* ptr);
  // A `kind` event ('p' or 't') when `name` is not the one of the allocation recorded
  // last, indexing `names`, with `bytes` (a pool's quota). Returns the index of `name`.
  std::size_t switch_to(char kind, const std::string& name, std::string& current,
                        std::vector<std::string>& names, std::uint64_t bytes = 0) const;

  static constexpr std::size_t kDefaultPool = ~std::size_t{0};
  struct Live {
    c10::DataPtr inner;
    std::uint64_t id = 0;
    std::uint64_t session = 0;  // the recording it was made in
    std::uint64_t bytes = 0;
    std::size_t pool = kDefaultPool;  // its index in pools_, in its session
  };

  mutable std::mutex mutex_;
  c10::Allocator* inner_ = nullptr;
  const ScopeBridge* scopes_ = nullptr;
  bool recording_ = false;
  std::uint64_t session_ = 0;
  mutable std::uint64_t next_id_ = 0;
  mutable std::vector<RecordedEvent> events_;
  mutable std::vector<std::string> pools_;
  mutable std::string current_pool_;
  mutable std::size_t current_pool_index_ = kDefaultPool;
  mutable std::vector<std::string> tags_;
  mutable std::string current_tag_;
  mutable std::unordered_map<void*, Live> live_;
};

}  // namespace npumem::python
