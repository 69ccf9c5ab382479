// The Python stack of each live allocation of a device, for _record_memory_history.
// As in PyTorch, the stack is taken before the allocator's lock (taking the GIL under
// it could deadlock with a thread that holds the GIL and frees a tensor), then kept
// by address; the observer half forgets an address when its block is freed or handed
// out again by a path that took no stack (C code, npumem_malloc).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "npumem/observer.h"

namespace npumem::python {

struct PythonFrame {
  std::string filename;
  int line = 0;
  std::string name;
};

class PythonStacks : public AllocatorObserver {
 public:
  // The calling thread's Python stack, innermost first, taking the GIL for it: empty
  // for a thread running no Python code (PyTorch's autograd workers) or while the
  // interpreter shuts down. The caller must hold no allocator lock.
  static std::vector<PythonFrame> capture();

  void remember(std::uint64_t address, std::vector<PythonFrame> stack);
  // Innermost first; empty when none was taken for the block at `address`.
  std::vector<PythonFrame> frames(std::uint64_t address) const;
  void on_event(const Event& event) override;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::vector<PythonFrame>> stacks_;
};

}  // namespace npumem::python
