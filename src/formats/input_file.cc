#include "input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "npumem/errors.h"
#include "npumem/units.h"

namespace npumem::cli {

void read_input_chunks(const std::string& path, const std::string& what,
                       const std::function<void(std::string_view)>& chunk) {
  // A directory opens, and reads as an empty file.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    throw Error("cannot read " + what + " " + path + ": it is a directory");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot read " + what + " " + path + ": " + std::strerror(errno));
  constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  std::vector<char> buffer(kChunkBytes);
  while (file) {
    file.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(file.gcount());
    if (got != 0) chunk(std::string_view(buffer.data(), got));
  }
  if (file.bad()) throw Error("cannot read " + what + " " + path + ": read failed");
}

std::string read_input_file(const std::string& path, const std::string& what) {
  std::string text;
  read_input_chunks(path, what, [&](std::string_view piece) {
    if (text.size() + piece.size() > kMaxInputFileBytes) {
      throw Error("cannot read " + what + " " + path + ": larger than " +
                  format_bytes(kMaxInputFileBytes) + ", more than any " + what +
                  " npumem reads (is it the file meant?)");
    }
    text.append(piece);
  });
  return text;
}

}  // namespace npumem::cli
