#include "observe/watch/backtrace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace npumem::observe {
namespace {

constexpr std::size_t kMaxCapture = 128;
// Frames a sanitizer may add between this function and backtrace().
constexpr std::size_t kInterceptorFrames = 2;
// The library's own frames left out before the caller's (in libnpumem.so): at most
// this many are taken beyond max_frames, so that the caller keeps its max_frames.
constexpr std::size_t kLibraryFrames = 8;

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

using CodeRanges = std::vector<std::pair<std::uintptr_t, std::uintptr_t>>;

// The executable segments of the shared library this code is in (libnpumem.so); none
// when a static link put it in the program, beside the caller's own code.
const CodeRanges& own_library_code() {
  static const CodeRanges ranges = [] {
    struct Search {
      std::uintptr_t here = 0;
      bool program = true;  // the first object visited is the program
      CodeRanges found;
    } search;
    search.here = reinterpret_cast<std::uintptr_t>(&own_library_code);
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
          auto& search = *static_cast<Search*>(data);
          CodeRanges code;
          bool holds_here = false;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& header = info->dlpi_phdr[i];
            if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
            const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
            code.emplace_back(begin, begin + header.p_memsz);
            holds_here =
                holds_here || (search.here >= begin && search.here < begin + header.p_memsz);
          }
          const bool program = std::exchange(search.program, false);
          if (!holds_here) return 0;
          if (!program) search.found = std::move(code);
          return 1;
        },
        &search);
    return search.found;
  }();
  return ranges;
}

bool in_own_library(const void* frame) {
  const auto address = reinterpret_cast<std::uintptr_t>(frame);
  const CodeRanges& ranges = own_library_code();
  return std::any_of(ranges.begin(), ranges.end(), [&](const auto& range) {
    return address >= range.first && address < range.second;
  });
}

}  // namespace

[[gnu::noinline]] std::size_t capture_backtrace(const void** frames, std::size_t max_frames,
                                                std::size_t skip) {
  std::array<void*, kMaxCapture> raw{};
  const std::size_t library = own_library_code().empty() ? 0 : kLibraryFrames;
  const std::size_t wanted =
      std::min(kMaxCapture, max_frames + skip + library + kInterceptorFrames + 1);
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
  // The library's own frames (the allocator's, the C API's entry) come before the
  // caller's: with 16 frames, a leak report began with five of them.
  while (first < captured && in_own_library(raw[first])) ++first;
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
