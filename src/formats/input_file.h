// Reading the files a command is given. Whatever the path names (a directory, a FIFO,
// /dev/zero, a file of many GiB) the read ends with an Error naming it, in bounded memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace npumem::cli {

// The most bytes a whole-file input (a JSON snapshot or model) may hold: /dev/zero
// given as a snapshot was read until memory ran out.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{2} << 30;

// Hands `path`'s bytes to `chunk`, a piece at a time, in order. `what` names the input
// in errors ("trace", "snapshot"): a directory, a file that cannot be opened or read.
void read_input_chunks(const std::string& path, const std::string& what,
                       const std::function<void(std::string_view)>& chunk);

// `path`'s bytes; an Error past kMaxInputFileBytes.
std::string read_input_file(const std::string& path, const std::string& what);

}  // namespace npumem::cli
