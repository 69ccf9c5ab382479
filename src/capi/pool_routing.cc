#include "capi/pool_routing.h"

#include <optional>

namespace npumem::capi {
namespace {

thread_local std::string t_pool;

}  // namespace

void set_thread_pool(const char* name) {
  t_pool = name == nullptr ? "" : name;
}

void* allocate_in_thread_pool(Allocator& allocator, std::size_t size, StreamId stream) {
  std::optional<PoolScope> scope;
  if (!t_pool.empty()) scope.emplace(allocator, t_pool);
  return allocator.allocate(size, stream);
}

}  // namespace npumem::capi
