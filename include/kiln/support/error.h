// Errors in kiln come in two tiers. A user error (bad shape, wrong dtype, illegal schedule step)
// says which API and object were involved, what was expected and what was found. An internal
// error means kiln itself is wrong and says so. Both are C++ exceptions; neither aborts.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

// The kind of an error decides the Python exception class it becomes (kiln.KilnValueError …).
enum class ErrorKind {
  kValue,     // a value is out of its allowed range or inconsistent with another
  kType,      // a dtype or an object kind is not what the API accepts
  kIndex,     // an index or an arity is wrong
  kSchedule,  // a schedule primitive's precondition failed (see schedule/)
  kRuntime,   // a failure while running compiled code or loading a module
  kInternal,  // a bug in kiln
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {

// Collects a message with operator<< and throws when the full expression ends.
class ErrorBuilder {
 public:
  ErrorBuilder(ErrorKind kind, const char* file, int line)
      : kind_(kind), file_(file), line_(line) {}
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  // Throws the collected message as a kiln::Error.
  [[noreturn]] void raise();

  template <class T>
  ErrorBuilder& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  ErrorKind kind_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

}  // namespace detail
}  // namespace kiln

// `user_check(cond) << "msg"` throws a kiln::Error of kind kValue when cond is false.
// The other macros pick another kind. `internal_check` marks the message as a kiln bug.
// The `for` runs its body (the streamed message) once and then raises; because raise() does not
// return, the compiler knows that control does not continue past `user_error(…) << …;`.
#define KILN_RAISE(kind)                                                              \
  for (::kiln::detail::ErrorBuilder kiln_error_builder_((kind), __FILE__, __LINE__);; \
       kiln_error_builder_.raise())                                                   \
  kiln_error_builder_
#define KILN_CHECK_WITH_KIND(cond, kind) \
  if (cond) {                            \
  } else                                 \
    KILN_RAISE(kind)

#define user_check(cond) KILN_CHECK_WITH_KIND(cond, ::kiln::ErrorKind::kValue)
#define type_check(cond) KILN_CHECK_WITH_KIND(cond, ::kiln::ErrorKind::kType)
#define index_check(cond) KILN_CHECK_WITH_KIND(cond, ::kiln::ErrorKind::kIndex)
#define runtime_check(cond) KILN_CHECK_WITH_KIND(cond, ::kiln::ErrorKind::kRuntime)
#define internal_check(cond) KILN_CHECK_WITH_KIND(cond, ::kiln::ErrorKind::kInternal)
#define user_error(kind) KILN_RAISE(kind)
#define internal_error KILN_RAISE(::kiln::ErrorKind::kInternal)
