// Named shared-memory pages (POSIX shm_open): the per-process stats pages that
// `npumem smi` and `npumem mon` read. The device layer is the only place in
// npumem that makes these OS calls.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace npumem::os {

class SharedPage {
 public:
  // Creates page `name` (no '/'; it appears as /dev/shm/<name>) of `bytes` bytes,
  // zero-filled and read-write, replacing a page of that name that this user may
  // remove. The bytes are reserved up front (a full /dev/shm is an Error here, not
  // a SIGBUS on a later write). Throws Error naming the page and the system's reason.
  static SharedPage create(const std::string& name, std::size_t bytes);
  // Like create, named `prefix` followed by 16 random hex digits, so that nobody can
  // take the name first; another name is drawn when one exists.
  static SharedPage create_unique(const std::string& prefix, std::size_t bytes);

  SharedPage(SharedPage&& other) noexcept;
  SharedPage& operator=(SharedPage&& other) noexcept;
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  ~SharedPage();

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  // nullopt when a page of that name exists.
  static std::optional<SharedPage> create_new(const std::string& name, std::size_t bytes);
  SharedPage(std::string name, void* data, std::size_t size)
      : name_(std::move(name)), data_(data), size_(size) {}

  std::string name_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// A page opened by a reader, who copies bytes out (pread) rather than mapping it: a
// page that its owner truncates while it is read then reads short instead of
// killing the reader with SIGBUS.
class SharedPageReader {
 public:
  // nullopt when the page is gone or is not a regular file.
  static std::optional<SharedPageReader> open(const std::string& name);

  SharedPageReader(SharedPageReader&& other) noexcept;
  SharedPageReader& operator=(SharedPageReader&& other) = delete;
  SharedPageReader(const SharedPageReader&) = delete;
  SharedPageReader& operator=(const SharedPageReader&) = delete;
  ~SharedPageReader();

  unsigned owner_uid() const { return owner_uid_; }
  std::size_t size() const { return size_; }  // when opened
  // Copies `bytes` bytes at `offset` into `out`; false when fewer were there.
  bool read(std::size_t offset, void* out, std::size_t bytes) const;

 private:
  SharedPageReader(int fd, unsigned owner_uid, std::size_t size)
      : fd_(fd), owner_uid_(owner_uid), size_(size) {}

  int fd_ = -1;
  unsigned owner_uid_ = 0;
  std::size_t size_ = 0;
};

// Removes page `name`; false when there was none. Mappings stay valid until unmapped.
bool remove_shared_page(const std::string& name);

// The names of the pages that start with `prefix`, sorted.
std::vector<std::string> list_shared_pages(std::string_view prefix);

// Whether a process with this id exists (it may belong to another user).
bool process_alive(int pid);

// The user a live process runs as; nullopt when there is no such process.
std::optional<unsigned> process_owner_uid(int pid);

// The effective user id of this process.
unsigned current_uid();

}  // namespace npumem::os
