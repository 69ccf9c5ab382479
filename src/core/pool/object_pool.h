// A free list of fixed-type objects carved from chunks, so splitting and merging
// blocks costs no call to the system allocator on the fast path.
#pragma once

#include <memory>
#include <vector>

namespace npumem::core {

template <typename T>
class ObjectPool {
 public:
  T* make() {
    if (free_.empty()) grow();
    T* object = free_.back();
    free_.pop_back();
    *object = T{};
    return object;
  }
  void recycle(T* object) { free_.push_back(object); }

 private:
  static constexpr std::size_t kChunk = 256;
  void grow() {
    chunks_.push_back(std::make_unique<T[]>(kChunk));
    T* chunk = chunks_.back().get();
    for (std::size_t i = kChunk; i-- > 0;) free_.push_back(&chunk[i]);
  }
  std::vector<std::unique_ptr<T[]>> chunks_;
  std::vector<T*> free_;
};

}  // namespace npumem::core
