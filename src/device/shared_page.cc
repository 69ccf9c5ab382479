#include "shared_page.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "npumem/errors.h"

namespace npumem::os {
namespace {

// Where Linux keeps shm_open objects; listing it is how pages are found.
constexpr const char* kShmDirectory = "/dev/shm";

std::string shm_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    throw Error("shared page name '" + name + "' must be non-empty and contain no '/'");
  }
  return "/" + name;
}

[[noreturn]] void fail(const std::string& name, const char* step, int error) {
  throw Error("cannot create shared page " + std::string(kShmDirectory) + "/" + name + " (" + step +
              "): " + std::strerror(error));
}

}  // namespace

SharedPage SharedPage::create(const std::string& name, std::size_t bytes) {
  const std::string path = shm_name(name);
  shm_unlink(path.c_str());
  const int fd = shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) fail(name, "shm_open", errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(path.c_str());
    fail(name, "ftruncate", error);
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) {
    shm_unlink(path.c_str());
    fail(name, "mmap", error);
  }
  return SharedPage(data, bytes);
}

std::optional<SharedPage> SharedPage::open_read_only(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(shm_name(name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<std::size_t>(info.st_size) < bytes) {
    close(fd);
    return std::nullopt;
  }
  void* data = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) return std::nullopt;
  return SharedPage(data, bytes);
}

SharedPage::SharedPage(SharedPage&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedPage& SharedPage::operator=(SharedPage&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedPage::~SharedPage() {
  if (data_ != nullptr) munmap(data_, size_);
}

bool remove_shared_page(const std::string& name) {
  return shm_unlink(shm_name(name).c_str()) == 0;
}

std::vector<std::string> list_shared_pages(std::string_view prefix) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kShmDirectory, error)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool process_alive(int pid) {
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

}  // namespace npumem::os
