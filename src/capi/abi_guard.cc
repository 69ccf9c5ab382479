#include "capi/abi_guard.h"

#include <new>

namespace npumem::capi {
namespace {

thread_local std::string message;
// Set when storing a message failed for want of host memory.
thread_local bool message_lost = false;

constexpr const char* kLostMessage =
    "npumem: host memory ran out while recording the error message";

npumem_status_t record(npumem_status_t status, std::string_view prefix,
                       std::string_view detail) noexcept {
  try {
    std::string text;
    text.reserve(prefix.size() + detail.size());
    text.append(prefix).append(detail);
    set_last_error(text);
  } catch (...) {
    message.clear();
    message_lost = true;
  }
  return status;
}

}  // namespace

void set_last_error(std::string_view text) noexcept {
  try {
    message.assign(text);
    message_lost = false;
  } catch (...) {
    message.clear();
    message_lost = true;
  }
}

const char* last_error() noexcept {
  return message_lost ? kLostMessage : message.c_str();
}

npumem_status_t status_of_current_exception() noexcept {
  try {
    throw;
  } catch (const OutOfMemory& e) {
    return record(NPUMEM_OUT_OF_MEMORY, "", e.what());
  } catch (const InvalidPointer& e) {
    return record(NPUMEM_INVALID_POINTER, "", e.what());
  } catch (const ConfigError& e) {
    return record(NPUMEM_INVALID_CONFIG, "", e.what());
  } catch (const ArgumentError& e) {
    return record(NPUMEM_INVALID_ARGUMENT, "", e.what());
  } catch (const std::bad_alloc&) {
    return record(NPUMEM_OUT_OF_MEMORY, "host memory ran out inside npumem", "");
  } catch (const std::exception& e) {
    return record(NPUMEM_INTERNAL, "internal error: ", e.what());
  } catch (...) {
    return record(NPUMEM_INTERNAL, "internal error: an exception of unknown type", "");
  }
}

}  // namespace npumem::capi
