// The calls that describe the library itself: version, status names, last error.
#include "capi/abi_guard.h"
#include "npumem/npumem.h"

extern "C" {

const char* npumem_version(void) noexcept {
  return NPUMEM_VERSION_STRING;
}

const char* npumem_status_name(npumem_status_t status) noexcept {
  switch (status) {
    case NPUMEM_OK:
      return "ok";
    case NPUMEM_OUT_OF_MEMORY:
      return "out_of_memory";
    case NPUMEM_INVALID_POINTER:
      return "invalid_pointer";
    case NPUMEM_INVALID_CONFIG:
      return "invalid_config";
    case NPUMEM_INVALID_ARGUMENT:
      return "invalid_argument";
    case NPUMEM_INTERNAL:
      return "internal";
  }
  return "unknown";
}

const char* npumem_last_error(void) noexcept {
  return npumem::capi::last_error();
}

}  // extern "C"
