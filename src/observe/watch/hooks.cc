#include "npumem/hooks.h"

#include <algorithm>

namespace npumem {
namespace {

std::uint32_t bit(EventKind kind) {
  return 1U << static_cast<unsigned>(kind);
}

}  // namespace

Hooks::Id Hooks::add(std::initializer_list<EventKind> kinds, HookCallback callback) {
  std::uint32_t mask = 0;
  for (const EventKind kind : kinds) mask |= bit(kind);
  std::lock_guard lock(mutex_);
  auto list = std::make_shared<HookList>(*hooks_);
  const Id id = next_id_++;
  list->push_back({id, mask, std::move(callback)});
  hooks_ = std::move(list);
  return id;
}

Hooks::Id Hooks::on_segment(HookCallback callback) {
  return add({EventKind::segment_alloc, EventKind::segment_free, EventKind::map, EventKind::unmap},
             std::move(callback));
}

bool Hooks::remove(Id id) {
  std::lock_guard lock(mutex_);
  auto list = std::make_shared<HookList>(*hooks_);
  const auto erased = std::erase_if(*list, [id](const Hook& hook) { return hook.id == id; });
  hooks_ = std::move(list);
  return erased != 0;
}

void Hooks::on_event(const Event& event) {
  std::shared_ptr<const HookList> hooks;
  {
    std::lock_guard lock(mutex_);
    hooks = hooks_;
  }
  for (const Hook& hook : *hooks) {
    if ((hook.kinds & bit(event.kind)) != 0) hook.callback(event);
  }
}

}  // namespace npumem
