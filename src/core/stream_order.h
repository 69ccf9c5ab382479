// Stream-ordered reuse, as PyTorch's caching allocator does it: a block remembers the
// stream it was allocated on (and streams added with record_stream). Once more than
// one stream allocates, a freed block is held back with an event recorded on each of
// its streams: its own stream may take it again at once (its work is ordered behind
// the freeing point), every other stream only after all its events have completed.
// A single-stream user never reaches this: nothing is held and no event is recorded.
// Blocks freed before ordering started recorded no event; the allocator holds them
// behind one on the first stream when it starts (Allocator::Impl::hold_free_blocks).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/pool/block.h"
#include "npumem/device.h"

namespace npumem::core {

class StreamOrder {
 public:
  // Notes an allocation's stream; ordering starts at the second stream seen, on a
  // device that has events. True when this call started it.
  bool note(const Device& device, StreamId stream) {
    if (active_) return false;
    if (!seen_) {
      first_stream_ = stream;
      seen_ = true;
      return false;
    }
    if (stream == first_stream_) return false;
    active_ = device.supports_events();
    return active_;
  }
  bool active() const { return active_; }
  // The one stream that allocated before ordering started.
  StreamId first_stream() const { return first_stream_; }
  // Whether freeing the block must go through hold(): ordering is on, or other
  // streams use it (record_stream).
  bool orders(const Block* block) const { return active_ || shared(block); }
  // Whether streams other than its own use the block (record_stream): only its own
  // stream may take it back at once, and only after its events when shared.
  bool shared(const Block* block) const { return any_shared() && uses_.contains(block); }
  // Whether any block is shared (shared() without a lookup, when none is).
  bool any_shared() const { return !uses_.empty(); }

  // record_stream: the block is also used by `stream`.
  void add_use(const Block* block, StreamId stream);
  // Holds a freed block back behind events on its streams. False when ordering is off,
  // or the device would not record an event: the caller frees the block as usual.
  // Inline: every free to a block pool asks, and almost always ordering is off.
  bool hold(Device& device, Block* block) { return orders(block) && hold_ordered(device, block); }
  // The latest held block of `stream` that fits `size` (at most 1/8 of it spare) and
  // no other stream used: taken back, its events released.
  Block* reuse(Device& device, StreamId stream, std::size_t size, const PoolState* pool);
  // Hands every held block whose events completed to `release` (per stream in order:
  // a stream's events complete in the order they were recorded).
  void settle(Device& device, const std::function<void(Block*)>& release);
  // Waits for every held block's events (Device::wait_event), then settles them all.
  void wait_and_settle(Device& device, const std::function<void(Block*)>& release);
  // Releases every event; the held blocks go with their segments (allocator teardown).
  void drop(Device& device);
  // Whether any block is held (cheaper than counting them: asked on every allocation).
  bool holds_any() const { return !held_.empty(); }
  // Whether `block` is held: freed, waiting for its streams' work (a scan: for errors).
  bool holds(const Block* block) const;

 private:
  struct Held {
    Block* block;
    std::vector<EventHandle> events;
    bool shared;  // other streams used it: even its own stream waits
  };
  void release_events(Device& device, Held& held);
  bool hold_ordered(Device& device, Block* block);

  bool seen_ = false;
  bool active_ = false;
  StreamId first_stream_ = 0;
  std::deque<Held> held_;
  std::unordered_map<const Block*, std::vector<StreamId>> uses_;
};

}  // namespace npumem::core
