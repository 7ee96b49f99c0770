// The runtime's internal error helpers: C API functions report failures by setting the calling
// thread's last-error message and returning nonzero (never by throwing across the C boundary).
#pragma once

#include <string>

namespace kiln {
namespace runtime {

// Sets the thread's last error to `message` and returns -1, so callers can `return fail(...)`.
int fail(const std::string& message);

// Formats a pointer as 0x... for messages.
std::string format_pointer(const void* ptr);

}  // namespace runtime
}  // namespace kiln
