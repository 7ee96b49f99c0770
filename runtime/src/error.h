// The runtime's internal error helpers: C API functions report failures by setting the calling
// thread's last-error message and returning nonzero (never by throwing across the C boundary).
#pragma once

#include <string>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

// Sets the thread's last error to `message` and returns `code`, so that callers can
// `return fail(kKilnErrorValue, ...)`: the code tells the host what kind of failure it was.
int fail(KilnErrorCode code, const std::string& message);

// Formats a pointer as 0x... for messages.
std::string format_pointer(const void* ptr);

}  // namespace runtime
}  // namespace kiln
