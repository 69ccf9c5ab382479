// The C ABI's leak check: a LeakDetector (npumem/leak_detector.h) per allocator handle,
// judged at npumem_iteration's boundaries.
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "capi/abi_guard.h"
#include "capi/handle.h"
#include "npumem/leak_detector.h"
#include "npumem/npumem.h"

namespace {

using npumem::capi::ArgumentError;
using npumem::capi::guarded;
using npumem::capi::handle_of;

// The running check; needs observers_mutex.
npumem::LeakDetector& running_check(npumem_allocator& handle, const char* call) {
  if (!handle.leak_detector) {
    throw ArgumentError(std::string(call) + " needs npumem_leak_check_start first");
  }
  return *handle.leak_detector;
}

void stop_locked(npumem_allocator& handle) {
  handle.allocator->remove_observer(handle.leak_detector);
  handle.leak_detector.reset();
}

}  // namespace

extern "C" {

npumem_status_t npumem_leak_check_start(npumem_allocator_t* allocator, double threshold,
                                        size_t warmup_iterations, int backtraces) noexcept {
  return guarded([&] {
    npumem_allocator& handle = handle_of(allocator);
    if (!(threshold >= 0) || std::isinf(threshold)) {
      // std::to_string wrote NaN as "-nan", and 1e-9 as "0.000000".
      std::ostringstream given;
      given << threshold;
      throw ArgumentError("threshold " + given.str() +
                          ": a fraction of the allocated bytes >= 0 (0: any growth)");
    }
    if (warmup_iterations > static_cast<size_t>(PTRDIFF_MAX)) {
      throw ArgumentError("warmup_iterations " + std::to_string(warmup_iterations) +
                          ": a count of iterations >= 0 (a negative number converted to size_t?)");
    }
    npumem::LeakOptions options;
    options.threshold = threshold;
    options.warmup_iterations = warmup_iterations;
    options.backtraces = backtraces != 0;
    std::lock_guard lock(handle.observers_mutex);
    if (handle.leak_detector) stop_locked(handle);
    handle.leak_detector = npumem::LeakDetector::attach(*handle.allocator, options);
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_leak_report(npumem_allocator_t* allocator, int* leaking,
                                   char** out) noexcept {
  if (leaking != nullptr) *leaking = 0;
  return guarded([&] {
    char*& result = npumem::capi::required(out, "out");
    result = nullptr;
    npumem_allocator& handle = handle_of(allocator);
    std::lock_guard lock(handle.observers_mutex);
    const npumem::LeakReport report = running_check(handle, "npumem_leak_report").report();
    result = npumem::capi::c_string(to_string(report));
    if (leaking != nullptr) *leaking = report.leaking ? 1 : 0;
    return NPUMEM_OK;
  });
}

npumem_status_t npumem_leak_check_stop(npumem_allocator_t* allocator) noexcept {
  return guarded([&] {
    npumem_allocator& handle = handle_of(allocator);
    std::lock_guard lock(handle.observers_mutex);
    running_check(handle, "npumem_leak_check_stop");
    stop_locked(handle);
    return NPUMEM_OK;
  });
}

}  // extern "C"
