// Native backtraces for history entries and leak reports: cheap capture of return
// addresses on the allocating thread, symbolisation only when a report is made.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace npumem::observe {

// Fills `frames` with up to `max_frames` return addresses of the caller's stack,
// innermost first, leaving out `skip` frames above the caller and, in libnpumem.so, the
// library's frames before the first of its caller's; returns how many.
std::size_t capture_backtrace(const void** frames, std::size_t max_frames, std::size_t skip);

// "function+0x1f (module)" where the symbol is known, else "module+0x1234", which
// addr2line resolves.
std::string describe_frame(const void* frame);

// describe_frame with a memo: reports see the same frames many times.
class FrameNames {
 public:
  const std::string& operator()(const void* frame);

 private:
  std::map<const void*, std::string> names_;
};

}  // namespace npumem::observe
