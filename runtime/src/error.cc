// The thread-local last-error message behind KilnSetLastError / KilnGetLastError, shared by
// compiled kernels (which set it before returning nonzero) and the runtime's own checks.
#include "error.h"

#include <cstdio>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

}  // namespace

int fail(KilnErrorCode code, const std::string& message) {
  last_error() = message;
  return code;
}

std::string format_pointer(const void* ptr) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%p", ptr);
  return buffer;
}

}  // namespace runtime
}  // namespace kiln

extern "C" {

void KilnSetLastError(const char* msg) {
  if (msg == nullptr) {
    kiln::runtime::last_error().clear();
  } else {
    kiln::runtime::last_error() = msg;
  }
}

const char* KilnGetLastError(void) {
  return kiln::runtime::last_error().c_str();
}

}  // extern "C"
