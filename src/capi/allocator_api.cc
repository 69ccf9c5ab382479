// The handle-based calls: allocators the caller owns, and the calls on any handle.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <type_traits>
#include <vector>

#include "capi/abi_guard.h"
#include "capi/handle.h"
#include "capi/pool_routing.h"
#include "npumem/errors.h"
#include "npumem/npumem.h"
#include "npumem/observer.h"
#include "npumem/snapshot.h"
#include "util/untrusted_text.h"

namespace npumem::capi {

Allocator& allocator_of(npumem_allocator_t* handle) {
  npumem_allocator_t& checked = required(handle, "allocator");
  if (!checked.allocator) {
    throw ArgumentError("allocator handle used after npumem_allocator_destroy");
  }
  return *checked.allocator;
}

namespace {

void fill(const Stats& stats, npumem_stats_t& out) {
  const auto tier = [](const StatSplit& split, Tier t) {
    return split.by_tier[static_cast<int>(t)].current;
  };
  out = npumem_stats_t{};
  out.allocated_bytes = stats.allocated_bytes.all.current;
  out.allocated_bytes_peak = stats.allocated_bytes.all.peak;
  out.requested_bytes = stats.requested_bytes.all.current;
  out.reserved_bytes = stats.reserved_bytes.all.current;
  out.reserved_bytes_peak = stats.reserved_bytes.all.peak;
  out.allocations = stats.allocation.all.current;
  out.segments = stats.segment.all.current;
  out.hbm_allocated_bytes = tier(stats.allocated_bytes, Tier::hbm);
  out.hbm_reserved_bytes = tier(stats.reserved_bytes, Tier::hbm);
  out.ddr_allocated_bytes = tier(stats.allocated_bytes, Tier::ddr);
  out.ddr_reserved_bytes = tier(stats.reserved_bytes, Tier::ddr);
  out.num_alloc_retries = stats.num_alloc_retries;
  out.num_ooms = stats.num_ooms;
  out.num_spills = stats.num_spills;
  out.num_reclaims = stats.num_reclaims;
  out.num_device_alloc = stats.num_device_alloc;
  out.num_device_free = stats.num_device_free;
}

}  // namespace

char* c_string(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

// Destroyed handles stay allocated for the life of the process so that a later call on
// one is an INVALID_ARGUMENT rather than a read of freed memory. They are listed here,
// reachable rather than leaked; each is a few dozen bytes.
namespace {
void retire(npumem_allocator* handle) {
  static std::mutex mutex;
  static auto* retired = new std::vector<npumem_allocator*>();
  std::lock_guard lock(mutex);
  retired->push_back(handle);
}
}  // namespace

}  // namespace npumem::capi

using npumem::capi::allocator_of;
using npumem::capi::ArgumentError;
using npumem::capi::guarded;
using npumem::capi::required;

extern "C" {

npumem_status_t npumem_allocator_create(const char* spec, const char* conf,
                                        npumem_allocator_t** out) noexcept {
  return guarded([&] {
    npumem_allocator_t*& result = required(out, "out");
    result = nullptr;
    if (spec == nullptr) throw ArgumentError("spec is NULL");
    const npumem::Config config = conf == nullptr ? npumem::Config{} : npumem::parse_config(conf);
    result = new npumem_allocator(npumem::make_device(spec), config,
                                  /*process_wide_allocator=*/false);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_allocator_destroy(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    if (allocator == nullptr) return NPUMEM_OK;
    if (allocator->process_wide) {
      throw ArgumentError(
          "npumem_allocator_destroy: this is a process-wide allocator (from "
          "npumem_device_allocator); it lives until the process exits");
    }
    if (!allocator->allocator) {
      throw ArgumentError("npumem_allocator_destroy: this allocator was destroyed already");
    }
    allocator->allocator.reset();
    npumem::capi::retire(allocator);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_allocate(npumem_allocator_t* allocator, size_t size, void** out) noexcept {
  return guarded([&] {
    void*& result = required(out, "out");
    result = nullptr;
    result = npumem::capi::allocate_in_thread_pool(allocator_of(allocator), size);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_deallocate(npumem_allocator_t* allocator, void* ptr) noexcept {
  return guarded([&] {
    npumem::Allocator& target = allocator_of(allocator);
    if (ptr != nullptr) target.deallocate(ptr);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_stats(npumem_allocator_t* allocator, npumem_stats_t* out) noexcept {
  return guarded([&] {
    npumem_stats_t& result = required(out, "out");
    npumem::capi::fill(allocator_of(allocator).stats(), result);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_stat(npumem_allocator_t* allocator, const char* key, int64_t* out) noexcept {
  return guarded([&] {
    int64_t& result = required(out, "out");
    if (key == nullptr) throw ArgumentError("key is NULL");
    const std::string name = key;
    const npumem::Allocator& owner = allocator_of(allocator);
    auto stats = owner.stats().as_map();
    if (owner.config().strategy == npumem::Strategy::planned)
      stats.merge(owner.planned_stats().as_map());
    const auto found = stats.find(name);
    const bool planned = owner.config().strategy == npumem::Strategy::planned;
    if (found == stats.end() && !planned && name.starts_with("planned.")) {
      throw ArgumentError("stat key '" + name + "' exists only under strategy:planned; this " +
                          "allocator's strategy is " +
                          std::string(npumem::strategy_name(owner.config().strategy)));
    }
    if (found == stats.end()) {
      throw ArgumentError("unknown stat key '" + name +
                          "'; keys look like allocated_bytes.all.current, "
                          "reserved_bytes.hbm.peak, num_ooms, planned.hits (see docs/C_API.md)");
    }
    result = found->second;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_reset_peak_stats(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    allocator_of(allocator).reset_peak_stats();
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_reset_accumulated_stats(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    allocator_of(allocator).reset_accumulated_stats();
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_set_memory_fraction(npumem_allocator_t* allocator,
                                           double fraction) noexcept {
  return guarded([&] {
    allocator_of(allocator).set_memory_fraction(fraction);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_empty_cache(npumem_allocator_t* allocator, size_t* released) noexcept {
  if (released != nullptr) *released = 0;  // what a failing call leaves
  return guarded([&] {
    const std::size_t bytes = allocator_of(allocator).empty_cache();
    if (released != nullptr) *released = bytes;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_resize(npumem_allocator_t* allocator, void* ptr, size_t size,
                              int* resized) noexcept {
  if (resized != nullptr) *resized = 0;  // what a failing call leaves
  return guarded([&] {
    if (ptr == nullptr) throw npumem::capi::ArgumentError("ptr is NULL");
    const bool done = allocator_of(allocator).resize(ptr, size);
    if (resized != nullptr) *resized = done ? 1 : 0;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_create_pool(npumem_allocator_t* allocator, const char* name,
                                   size_t quota_bytes) noexcept {
  return guarded([&] {
    if (name == nullptr) throw npumem::capi::ArgumentError("name is NULL");
    allocator_of(allocator).create_pool(name, quota_bytes);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_remove_pool(npumem_allocator_t* allocator, const char* name,
                                   size_t* released) noexcept {
  if (released != nullptr) *released = 0;  // what a failing call leaves
  return guarded([&] {
    if (name == nullptr) throw npumem::capi::ArgumentError("name is NULL");
    const std::size_t bytes = allocator_of(allocator).remove_pool(name);
    if (released != nullptr) *released = bytes;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_pool_count(npumem_allocator_t* allocator, size_t* count) noexcept {
  return guarded([&] {
    required(count, "count") = allocator_of(allocator).pools().size();
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_pool_info(npumem_allocator_t* allocator, size_t index,
                                 npumem_pool_info_t* out) noexcept {
  if (out != nullptr) out->name = nullptr;  // what a failing call leaves
  return guarded([&] {
    npumem_pool_info_t& result = required(out, "out");
    const auto pools = allocator_of(allocator).pools();
    if (index >= pools.size()) {
      throw ArgumentError("pool index " + std::to_string(index) + " is past the last (" +
                          std::to_string(pools.size()) + " pools)");
    }
    const npumem::PoolInfo& pool = pools[index];
    npumem_pool_info_t info{};
    info.quota_bytes = pool.quota_bytes;
    info.tier = !pool.tier                        ? NPUMEM_TIER_ANY
                : *pool.tier == npumem::Tier::hbm ? NPUMEM_TIER_HBM
                                                  : NPUMEM_TIER_DDR;
    npumem::capi::fill(pool.stats, info.stats);
    info.name = npumem::capi::c_string(pool.name);
    result = info;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_pool_stats(npumem_allocator_t* allocator, const char* name,
                                  npumem_stats_t* out) noexcept {
  return guarded([&] {
    npumem_stats_t& result = required(out, "out");
    if (name == nullptr) throw ArgumentError("name is NULL");
    for (const npumem::PoolInfo& pool : allocator_of(allocator).pools()) {
      if (pool.name != name) continue;
      npumem::capi::fill(pool.stats, result);
      return NPUMEM_OK;
    }
    throw npumem::ConfigError("unknown pool '" + npumem::util::escaped_for_display(name) + "'");
  });
}

npumem_status_t npumem_set_pool(const char* name) noexcept {
  return guarded([&] {
    npumem::capi::set_thread_pool(name);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_set_tag(const char* tag) noexcept {
  return guarded([&] {
    npumem::set_memory_tag(tag == nullptr ? "" : tag);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_iteration(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    allocator_of(allocator).mark_iteration();
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_iteration_key(npumem_allocator_t* allocator, uint64_t key) noexcept {
  return guarded([&] {
    allocator_of(allocator).mark_iteration(key);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_snapshot_json(npumem_allocator_t* allocator, char** out) noexcept {
  return guarded([&] {
    char*& result = required(out, "out");
    result = nullptr;
    std::ostringstream json;
    npumem::write_snapshot_json(npumem::memory_snapshot(allocator_of(allocator)), json);
    result = npumem::capi::c_string(json.str());
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_create_tier_pool(npumem_allocator_t* allocator, const char* name,
                                        size_t quota_bytes, npumem_tier_t tier) noexcept {
  return guarded([&] {
    if (name == nullptr) throw ArgumentError("name is NULL");
    // Read as an integer: a C caller may pass any value, and loading one outside the
    // enumeration as the enum type is undefined in C++.
    std::underlying_type_t<npumem_tier_t> value = 0;
    std::memcpy(&value, &tier, sizeof value);
    std::optional<npumem::Tier> pinned;
    if (value == NPUMEM_TIER_HBM) {
      pinned = npumem::Tier::hbm;
    } else if (value == NPUMEM_TIER_DDR) {
      pinned = npumem::Tier::ddr;
    } else if (value != NPUMEM_TIER_ANY) {
      throw ArgumentError("tier " + std::to_string(value) +
                          " is not NPUMEM_TIER_ANY, NPUMEM_TIER_HBM or NPUMEM_TIER_DDR");
    }
    allocator_of(allocator).create_pool(name, quota_bytes, pinned);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_pool_allocate(npumem_allocator_t* allocator, const char* pool, size_t size,
                                     void** out) noexcept {
  return guarded([&] {
    void*& result = required(out, "out");
    result = nullptr;
    if (pool == nullptr) throw ArgumentError("pool is NULL");
    npumem::Allocator& target = allocator_of(allocator);
    const npumem::PoolScope scope(target, pool);
    result = target.allocate(size);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_copy(npumem_allocator_t* allocator, void* dst, const void* src, size_t bytes,
                            double* seconds) noexcept {
  if (seconds != nullptr) *seconds = 0;  // what a failing call leaves
  return guarded([&] {
    npumem::Allocator& copier = allocator_of(allocator);
    // NULL is an argument's absence, as everywhere in the C ABI, not a pointer to judge.
    if (dst == nullptr) throw ArgumentError("dst is NULL");
    if (src == nullptr) throw ArgumentError("src is NULL");
    double modelled = 0;
    try {
      modelled = copier.copy(dst, src, bytes);
    } catch (const npumem::InvalidPointer&) {
      throw;
    } catch (const npumem::Error& overrun) {
      throw ArgumentError(overrun.what());
    }
    if (seconds != nullptr) *seconds = modelled;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_warnings(npumem_allocator_t* allocator, char** out) noexcept {
  return guarded([&] {
    char*& result = required(out, "out");
    result = nullptr;
    std::string lines;
    for (const std::string& warning : allocator_of(allocator).warnings()) lines += warning + "\n";
    result = npumem::capi::c_string(lines);
    return NPUMEM_OK;
  });
}

void npumem_string_free(char* text) noexcept {
  std::free(text);
}

}  // extern "C"
