// How errors cross the C ABI: every entry point runs its body under guarded(), which
// turns any exception into a status code and this thread's last-error message.
#pragma once

#include <string>
#include <string_view>

#include "npumem/errors.h"
#include "npumem/npumem.h"

namespace npumem::capi {

// A bad argument to a C entry point (NULL where a value is needed, a bad index).
class ArgumentError : public Error {
 public:
  using Error::Error;
};

// Replaces this thread's last error; never throws (a message that cannot be stored
// is replaced by a fixed one).
void set_last_error(std::string_view message) noexcept;
const char* last_error() noexcept;

// Classifies the exception being handled, records its message and returns its status.
npumem_status_t status_of_current_exception() noexcept;

// Runs body (returning npumem_status_t) with the last error cleared first.
template <typename Body>
npumem_status_t guarded(Body&& body) noexcept {
  set_last_error({});
  try {
    return body();
  } catch (...) {
    return status_of_current_exception();
  }
}

// Throws ArgumentError naming the parameter when pointer is NULL.
template <typename T>
T& required(T* pointer, const char* parameter) {
  if (pointer == nullptr) throw ArgumentError(std::string(parameter) + " is NULL");
  return *pointer;
}

}  // namespace npumem::capi
