#include "shared_page.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "npumem/errors.h"

namespace npumem::os {
namespace {

// Where Linux keeps shm_open objects; listing it is how pages are found.
constexpr const char* kShmDirectory = "/dev/shm";
// Random names collide only when someone plants them; a few draws get past that.
constexpr int kNameAttempts = 16;

std::string random_hex() {
  std::uint64_t value = 0;
  if (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    throw Error(std::string("cannot draw a random shared page name: ") + std::strerror(errno));
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

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
  shm_unlink(shm_name(name).c_str());
  std::optional<SharedPage> page = create_new(name, bytes);
  if (!page) fail(name, "shm_open", EEXIST);
  return std::move(*page);
}

SharedPage SharedPage::create_unique(const std::string& prefix, std::size_t bytes) {
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    std::optional<SharedPage> page = create_new(prefix + random_hex(), bytes);
    if (page) return std::move(*page);
  }
  fail(prefix + "*", "shm_open", EEXIST);
}

std::optional<SharedPage> SharedPage::create_new(const std::string& name, std::size_t bytes) {
  const std::string path = shm_name(name);
  const int fd = shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == EEXIST) return std::nullopt;
  if (fd < 0) fail(name, "shm_open", errno);
  // Reserves the memory now: a page only extended (ftruncate) is sparse, and a write
  // into it when /dev/shm is full raises SIGBUS.
  if (const int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
    close(fd);
    shm_unlink(path.c_str());
    fail(name, "posix_fallocate", error);
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) {
    shm_unlink(path.c_str());
    fail(name, "mmap", error);
  }
  return SharedPage(name, data, bytes);
}

SharedPage::SharedPage(SharedPage&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

SharedPage& SharedPage::operator=(SharedPage&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedPage::~SharedPage() {
  if (data_ != nullptr) munmap(data_, size_);
}

std::optional<SharedPageReader> SharedPageReader::open(const std::string& name) {
  const int fd =
      shm_open(shm_name(name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  return SharedPageReader(fd, info.st_uid, static_cast<std::size_t>(info.st_size));
}

SharedPageReader::SharedPageReader(SharedPageReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), owner_uid_(other.owner_uid_), size_(other.size_) {}

SharedPageReader::~SharedPageReader() {
  if (fd_ >= 0) close(fd_);
}

bool SharedPageReader::read(std::size_t offset, void* out, std::size_t bytes) const {
  auto* at = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t got = pread(fd_, at, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += got;
    offset += static_cast<std::size_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
  return true;
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

namespace {

// The state letter of /proc/<pid>/stat ('R', 'S', 'Z', ...), after the command name,
// which may hold spaces and parentheses itself; '?' when unreadable.
char process_state(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  const std::string line((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= line.size()) return '?';
  return line[name_end + 2];
}

}  // namespace

// A zombie (exited, not reaped yet: a killed worker whose parent has not waited)
// answers kill() but holds no memory.
bool process_alive(int pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  const char state = process_state(pid);
  return state != 'Z' && state != 'X';
}

std::optional<unsigned> process_owner_uid(int pid) {
  struct stat info {};
  if (pid <= 0 || stat(("/proc/" + std::to_string(pid)).c_str(), &info) != 0) return std::nullopt;
  return info.st_uid;
}

unsigned current_uid() {
  return geteuid();
}

}  // namespace npumem::os
