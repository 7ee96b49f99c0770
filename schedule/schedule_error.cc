// Construction of ScheduleError messages: the primitive, the failed condition, and the IR with
// the offending node marked.
#include "kiln/schedule/schedule_error.h"

#include "kiln/ir/printer.h"

namespace kiln::schedule {

namespace {

std::string full_message(const std::string& error_class, const std::string& primitive,
                         const std::string& message, const ir::Ref<ir::PrimFunc>& func,
                         const ir::Node* mark) {
  std::string text = primitive + ": " + message + " [" + error_class + "]";
  if (func.defined()) {
    ir::PrintOptions options;
    options.mark = mark;
    options.mark_note = "here";
    text += "\nin the IR:\n" + ir::to_script(func, "main", options);
  }
  return text;
}

}  // namespace

ScheduleError::ScheduleError(std::string error_class, const std::string& primitive,
                             const std::string& message, const ir::Ref<ir::PrimFunc>& func,
                             const ir::Node* mark)
    : Error(ErrorKind::kSchedule, full_message(error_class, primitive, message, func, mark)),
      error_class_(std::move(error_class)) {}

void schedule_error(const std::string& error_class, const std::string& primitive,
                    const std::string& message, const ir::Ref<ir::PrimFunc>& func,
                    const ir::Node* mark) {
  throw ScheduleError(error_class, primitive, message, func, mark);
}

}  // namespace kiln::schedule
