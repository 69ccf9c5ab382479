// A memory barrier on every running thread of this process at once (membarrier(2),
// private expedited): the heavy half of an asymmetric fence, whose light half (a
// compiler barrier) a thread on a hot path pays instead of a locked instruction.
#pragma once

namespace npumem::os {

// Whether process_fence works here (the kernel has the command and this process is
// registered for it; registers on the first call). False: never call process_fence.
bool process_fence_available();

// Returns once every thread of this process that was running has executed a full
// memory barrier. Only after process_fence_available() returned true.
void process_fence();

}  // namespace npumem::os
