#include "capi/process_stats_page.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "npumem/process_allocators.h"
#include "npumem/stats_page.h"

namespace npumem::capi {
namespace {

// The publisher and the registrations of this process. Never destroyed as a whole
// (allocators may be used during static destruction); EndAtExit ends them at exit,
// which removes the page.
struct ProcessStatsPage {
  std::mutex mutex;
  pid_t owner_pid = 0;  // the process that made the publisher
  bool failed = false;
  bool warned_of_setting = false;
  std::unique_ptr<StatsPublisher> publisher;
  std::vector<StatsPublisher::Registration> registrations;

  // A forked child inherits the parent's publisher without its thread, and its page
  // maps the parent's: the child leaves both alone (leaked) and makes its own. Needs mutex.
  void forget_if_inherited() {
    if (!publisher || owner_pid == ::getpid()) return;
    (void)publisher.release();
    (void)new std::vector<StatsPublisher::Registration>(std::move(registrations));
    registrations.clear();
  }
};

ProcessStatsPage& process_stats_page() {
  static auto* page = new ProcessStatsPage();
  return *page;
}

struct EndAtExit {
  ~EndAtExit() {
    ProcessStatsPage& page = process_stats_page();
    std::lock_guard lock(page.mutex);
    page.forget_if_inherited();
    page.registrations.clear();  // before the publisher they point at
    page.publisher.reset();
  }
};

}  // namespace

void publish_on_stats_page(const Allocator& allocator) noexcept {
  const StatsPageSetting setting = stats_page_setting();
  if (setting == StatsPageSetting::off) return;
  static EndAtExit end_at_exit;
  ProcessStatsPage& page = process_stats_page();
  std::lock_guard lock(page.mutex);
  // Every other setting refuses a bad value; this one is read where nothing can fail, so
  // it says so once (NPUMEM_STATS_PAGE=bogus published without a word).
  if (setting == StatsPageSetting::unrecognised && !page.warned_of_setting) {
    page.warned_of_setting = true;
    const char* value = std::getenv(kStatsPageVariable);
    std::cerr << "npumem: " << kStatsPageVariable << "=" << (value != nullptr ? value : "")
              << " is neither on (1, on, true, yes) nor off (0, off, false, no); publishing "
                 "stats for `npumem smi` as with 1\n";
  }
  page.forget_if_inherited();
  if (page.failed) return;
  try {
    if (!page.publisher) {
      page.publisher = std::make_unique<StatsPublisher>();
      page.owner_pid = ::getpid();
    }
    page.registrations.push_back(page.publisher->publish(allocator));
  } catch (const std::exception& error) {
    page.failed = true;  // one line per process, not one per device
    std::cerr << "npumem: not publishing stats for `npumem smi` (" << kStatsPageVariable
              << "=0 silences this): " << error.what() << "\n";
  }
}

void publish_after_fork() noexcept {
  {
    ProcessStatsPage& page = process_stats_page();
    std::lock_guard lock(page.mutex);
    if (!page.publisher || page.owner_pid == ::getpid()) return;  // nothing inherited
    page.forget_if_inherited();
  }
  for (const int device : process_allocator_devices()) {
    if (const Allocator* allocator = find_process_allocator(device)) {
      publish_on_stats_page(*allocator);
    }
  }
}

}  // namespace npumem::capi
