#include "device/os/process_fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace npumem::os {

namespace {

long membarrier(int command) {
  return syscall(SYS_membarrier, command, 0, 0);
}

}  // namespace

bool process_fence_available() {
  static const bool available = [] {
    const long commands = membarrier(MEMBARRIER_CMD_QUERY);
    return commands >= 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return available;
}

void process_fence() {
  // Registered and supported (process_fence_available): a failure here would leave a
  // lock without mutual exclusion, so it ends the process rather than go on.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) std::abort();
}

}  // namespace npumem::os
