// ScheduleError: a schedule primitive's precondition failed. One error class per failure mode
// (the Python exception is the kiln.tir.ScheduleError subclass of the same name); the message
// names the primitive, the block or loop, the condition that failed, and shows the IR with the
// offending place marked. The tuner catches exactly this type to drop a candidate.
#pragma once

#include <string>

#include "kiln/ir/function.h"
#include "kiln/support/error.h"

namespace kiln::schedule {

class ScheduleError : public Error {
 public:
  // `error_class` is the failure mode, e.g. "InvalidSplitFactorsError"; `primitive` the
  // primitive's name ("split"); `message` says what was expected and what was found. When
  // `func` is given, the IR is appended with `mark` (a node inside it) flagged.
  ScheduleError(std::string error_class, const std::string& primitive, const std::string& message,
                const ir::Ref<ir::PrimFunc>& func = nullptr, const ir::Node* mark = nullptr);
  const std::string& error_class() const { return error_class_; }

 private:
  std::string error_class_;
};

// Throws a ScheduleError; a statement form so that primitives read as a list of checks:
//   if (!ok) schedule_error("NotAffineBindingError", "compute_at", msg, func, block);
[[noreturn]] void schedule_error(const std::string& error_class, const std::string& primitive,
                                 const std::string& message,
                                 const ir::Ref<ir::PrimFunc>& func = nullptr,
                                 const ir::Node* mark = nullptr);

}  // namespace kiln::schedule
