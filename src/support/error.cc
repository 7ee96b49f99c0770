// Throwing side of the error macros in kiln/support/error.h.
#include "kiln/support/error.h"

namespace kiln::detail {

void ErrorBuilder::raise() {
  std::string message = stream_.str();
  if (kind_ == ErrorKind::kInternal) {
    std::ostringstream full;
    full << "internal error in kiln (this is a bug in kiln, not in your program) at " << file_
         << ":" << line_ << ": " << message;
    message = full.str();
  }
  throw Error(kind_, message);
}

}  // namespace kiln::detail
