// The errors npumem raises. Each names the problem so a user can act on it.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace npumem {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation that no tier, cache release or pool quota could satisfy.
// what() is the full explanation (tiers, fragmentation, advice).
class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& message, std::size_t requested_bytes, std::string pool)
      : Error(message), requested_bytes_(requested_bytes), pool_(std::move(pool)) {}
  std::size_t requested_bytes() const { return requested_bytes_; }
  const std::string& pool() const { return pool_; }

 private:
  std::size_t requested_bytes_;
  std::string pool_;
};

// Freeing a pointer the allocator never returned, or freeing it twice.
class InvalidPointer : public Error {
 public:
  using Error::Error;
};

// A bad device spec, config string or option value.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Malformed input file: the message names the file and line.
class ParseError : public Error {
 public:
  ParseError(const std::string& file, std::size_t line, const std::string& problem)
      : Error(file + ":" + std::to_string(line) + ": " + problem), line_(line) {}
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

}  // namespace npumem
