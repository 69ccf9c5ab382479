#include "core/stream_order.h"

#include <algorithm>
#include <unordered_set>

namespace npumem::core {

void StreamOrder::add_use(const Block* block, StreamId stream) {
  if (stream == block->stream) return;
  std::vector<StreamId>& streams = uses_[block];
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) {
    streams.push_back(stream);
  }
}

bool StreamOrder::holds(const Block* block) const {
  return std::any_of(held_.begin(), held_.end(),
                     [block](const Held& held) { return held.block == block; });
}

bool StreamOrder::hold_ordered(Device& device, Block* block) {
  std::vector<StreamId> streams{block->stream};
  bool shared = false;
  if (const auto used = uses_.find(block); used != uses_.end()) {
    streams.insert(streams.end(), used->second.begin(), used->second.end());
    shared = true;
    uses_.erase(used);
  }
  if (!active_ && !shared) return false;
  Held held{block, {}, shared};
  for (const StreamId stream : streams) {
    EventHandle event;
    if (device.record_event(stream, &event) != DeviceStatus::ok) {
      release_events(device, held);
      return false;
    }
    held.events.push_back(event);
  }
  held_.push_back(std::move(held));
  return true;
}

Block* StreamOrder::reuse(Device& device, StreamId stream, std::size_t size,
                          const PoolState* pool) {
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) {
    Block* block = it->block;
    if (it->shared || block->stream != stream || block->segment->pool != pool ||
        block->size < size || block->size - size > block->size / 8) {
      continue;
    }
    release_events(device, *it);
    held_.erase(std::next(it).base());
    return block;
  }
  return nullptr;
}

void StreamOrder::settle(Device& device, const std::function<void(Block*)>& release) {
  std::unordered_set<StreamId> waiting;  // streams with an event still running
  for (auto it = held_.begin(); it != held_.end();) {
    const bool done = !waiting.contains(it->block->stream) &&
                      std::all_of(it->events.begin(), it->events.end(),
                                  [&](EventHandle event) { return device.event_completed(event); });
    if (!done) {
      waiting.insert(it->block->stream);
      ++it;
      continue;
    }
    Block* block = it->block;
    release_events(device, *it);
    it = held_.erase(it);
    release(block);
  }
}

void StreamOrder::wait_and_settle(Device& device, const std::function<void(Block*)>& release) {
  for (const Held& held : held_) {
    for (const EventHandle event : held.events) device.wait_event(event);
  }
  settle(device, release);
}

void StreamOrder::drop(Device& device) {
  for (Held& held : held_) release_events(device, held);
  held_.clear();
  uses_.clear();
}

void StreamOrder::release_events(Device& device, Held& held) {
  for (const EventHandle event : held.events) device.release_event(event);
  held.events.clear();
}

}  // namespace npumem::core
