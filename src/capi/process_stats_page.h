// The stats page (/dev/shm/npumem.<pid>) of the process-wide allocators, so that
// `npumem smi` and `npumem mon` list every process allocating through npumem: C
// programs on libnpumem.so, Python processes on npumem and npumem.torch.
#pragma once

#include "npumem/allocator.h"

namespace npumem::capi {

// Publishes a process-wide allocator (which lives until the process exits) on this
// process's stats page, made on first use. Never throws: when the page cannot be made
// or is full, one line on stderr says so and allocation goes on unpublished.
void publish_on_stats_page(const Allocator& allocator) noexcept;
// In a forked child: publishes the allocators it inherited on a page of its own (the
// parent's page stays the parent's). Does nothing in the process that made the page.
void publish_after_fork() noexcept;

}  // namespace npumem::capi
