// Named shared-memory pages (POSIX shm_open): the per-process stats pages that
// `npumem smi` and `npumem mon` read. The device layer is the only place in
// npumem that makes these OS calls.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npumem::os {

class SharedPage {
 public:
  // Creates page `name` (no '/'; it appears as /dev/shm/<name>) of `bytes` bytes,
  // zero-filled and read-write, replacing a page of that name. Throws Error naming
  // the page and the system's reason when it cannot.
  static SharedPage create(const std::string& name, std::size_t bytes);
  // Opens an existing page read-only; nullopt when it is gone or smaller than `bytes`.
  static std::optional<SharedPage> open_read_only(const std::string& name, std::size_t bytes);

  SharedPage(SharedPage&& other) noexcept;
  SharedPage& operator=(SharedPage&& other) noexcept;
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  ~SharedPage();

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  SharedPage(void* data, std::size_t size) : data_(data), size_(size) {}

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// Removes page `name`; false when there was none. Mappings stay valid until unmapped.
bool remove_shared_page(const std::string& name);

// The names of the pages that start with `prefix`, sorted.
std::vector<std::string> list_shared_pages(std::string_view prefix);

// Whether a process with this id exists (it may belong to another user).
bool process_alive(int pid);

}  // namespace npumem::os
