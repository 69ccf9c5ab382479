// The C ABI's hooks (npumem/hooks.h's Hooks behind a C callback) and the size-pattern
// report, per allocator handle.
#include <string>

#include "capi/abi_guard.h"
#include "capi/handle.h"
#include "npumem/npumem.h"

namespace {

using npumem::EventKind;
using npumem::capi::ArgumentError;
using npumem::capi::guarded;
using npumem::capi::handle_of;

static_assert(NPUMEM_EVENT_ALLOC == static_cast<int>(EventKind::alloc));
static_assert(NPUMEM_EVENT_OOM == static_cast<int>(EventKind::oom));
static_assert(NPUMEM_EVENT_ITERATION == static_cast<int>(EventKind::iteration));

// The handle's Hooks, attached to its allocator on first use. Needs observers_mutex.
npumem::Hooks& hooks_locked(npumem_allocator& handle) {
  if (!handle.hooks) {
    handle.hooks = std::make_shared<npumem::Hooks>();
    handle.allocator->add_observer(handle.hooks);
  }
  return *handle.hooks;
}

}  // namespace

extern "C" {

npumem_status_t npumem_add_hook(npumem_allocator_t* allocator, uint32_t kinds, npumem_hook_t hook,
                                void* user_data, uint64_t* id) noexcept {
  if (id != nullptr) *id = 0;  // what a failing call leaves: ids start at 1
  return guarded([&] {
    npumem_allocator& handle = handle_of(allocator);
    if (hook == nullptr) throw ArgumentError("hook is NULL");
    constexpr std::uint32_t kKnownKinds = (1u << (NPUMEM_EVENT_ITERATION + 1)) - 1;
    if (kinds == 0)
      throw ArgumentError("kinds 0 names no event kind (bits 1u << NPUMEM_EVENT_...)");
    if ((kinds & ~kKnownKinds) != 0) {
      throw ArgumentError("kinds " + std::to_string(kinds) + " sets bits no event kind has (" +
                          std::to_string(kinds & ~kKnownKinds) +
                          "); the kinds are bits 1u << NPUMEM_EVENT_... up to " +
                          "NPUMEM_EVENT_ITERATION");
    }
    std::lock_guard lock(handle.observers_mutex);
    npumem::Hooks& hooks = hooks_locked(handle);
    const npumem::Hooks::Id added =
        hooks.add({EventKind::alloc, EventKind::free, EventKind::segment_alloc,
                   EventKind::segment_free, EventKind::map, EventKind::unmap, EventKind::spill,
                   EventKind::reclaim, EventKind::oom, EventKind::iteration},
                  [kinds, hook, user_data](const npumem::Event& event) {
                    if ((kinds & (1u << static_cast<unsigned>(event.kind))) == 0) return;
                    const std::string pool(event.pool);
                    const std::string tag(event.tag);
                    const npumem_event_t c_event{static_cast<npumem_event_kind_t>(event.kind),
                                                 event.address,
                                                 event.bytes,
                                                 event.requested_bytes,
                                                 static_cast<int>(event.tier),
                                                 pool.c_str(),
                                                 tag.c_str()};
                    hook(&c_event, user_data);
                  });
    if (id != nullptr) *id = added;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_remove_hook(npumem_allocator_t* allocator, uint64_t id) noexcept {
  return guarded([&] {
    npumem_allocator& handle = handle_of(allocator);
    std::lock_guard lock(handle.observers_mutex);
    if (!handle.hooks || !handle.hooks->remove(id)) {
      throw ArgumentError("no hook has id " + std::to_string(id));
    }
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_size_patterns_start(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    npumem_allocator& handle = handle_of(allocator);
    std::lock_guard lock(handle.observers_mutex);
    if (handle.size_patterns) return NPUMEM_OK;
    handle.size_patterns = std::make_unique<npumem::SizePatternAnalyser>();
    npumem::Hooks& hooks = hooks_locked(handle);
    handle.size_patterns->install(hooks);
    npumem::SizePatternAnalyser* analyser = handle.size_patterns.get();
    hooks.add({EventKind::iteration}, [analyser](const npumem::Event&) { analyser->tick(); });
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_size_patterns(npumem_allocator_t* allocator, char** out) noexcept {
  return guarded([&] {
    char*& result = npumem::capi::required(out, "out");
    result = nullptr;
    npumem_allocator& handle = handle_of(allocator);
    std::lock_guard lock(handle.observers_mutex);
    if (!handle.size_patterns) {
      throw ArgumentError("npumem_size_patterns needs npumem_size_patterns_start first");
    }
    result = npumem::capi::c_string(to_string(handle.size_patterns->patterns()));
    return NPUMEM_OK;
  });
}

}  // extern "C"
