#include "observe/watch/backtrace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace npumem::observe {
namespace {

constexpr std::size_t kMaxCapture = 128;
// Frames a sanitizer may add between this function and backtrace().
constexpr std::size_t kInterceptorFrames = 2;

std::string demangled(const char* symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(symbol);
}

std::string base_name(const char* path) {
  const std::string text = path != nullptr ? path : "?";
  const std::size_t slash = text.rfind('/');
  return slash == std::string::npos ? text : text.substr(slash + 1);
}

std::string hex_offset(const void* from, const void* to) {
  char text[32];
  std::snprintf(text, sizeof text, "+0x%zx",
                static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(to) -
                                         reinterpret_cast<std::uintptr_t>(from)));
  return text;
}

}  // namespace

[[gnu::noinline]] std::size_t capture_backtrace(const void** frames, std::size_t max_frames,
                                                std::size_t skip) {
  std::array<void*, kMaxCapture> raw{};
  const std::size_t wanted = std::min(kMaxCapture, max_frames + skip + kInterceptorFrames + 1);
  const auto captured = static_cast<std::size_t>(backtrace(raw.data(), static_cast<int>(wanted)));
  // The caller's frame is where this function returns to; frames above it (this
  // function's, and a sanitizer's backtrace interceptor) are not the caller's stack.
  const void* caller = __builtin_return_address(0);
  std::size_t first = std::min<std::size_t>(captured, 1);
  for (std::size_t i = 0; i < captured; ++i) {
    if (raw[i] == caller) {
      first = i;
      break;
    }
  }
  first = std::min(captured, first + skip);
  const std::size_t count = std::min(max_frames, captured - first);
  std::copy_n(raw.begin() + static_cast<std::ptrdiff_t>(first), count, frames);
  return count;
}

std::string describe_frame(const void* frame) {
  Dl_info info{};
  if (dladdr(frame, &info) == 0) return hex_offset(nullptr, frame);
  const std::string module = base_name(info.dli_fname);
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    return demangled(info.dli_sname) + hex_offset(info.dli_saddr, frame) + " (" + module + ")";
  }
  return module + hex_offset(info.dli_fbase, frame);
}

const std::string& FrameNames::operator()(const void* frame) {
  auto found = names_.find(frame);
  if (found == names_.end()) found = names_.emplace(frame, describe_frame(frame)).first;
  return found->second;
}

}  // namespace npumem::observe
