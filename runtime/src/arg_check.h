// The argument checker: compares the packed arguments of a call with the function's spec before
// the kernel runs, so that generated code can trust every tensor it is given.
#pragma once

#include <cstdint>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

// The bytes [begin, end) that a tensor's elements occupy; begin == end for a tensor without
// elements (or an argument that is not a tensor).
struct ByteSpan {
  uintptr_t begin;
  uintptr_t end;
};

// Checks the count, type codes, and each tensor's dtype, ndim, device, shape (binding symbolic
// variables at their first occurrence and range-checking each against its dtype), strides,
// element count and byte extent (neither may overflow 64 bits), data pointer and alignment, and
// each scalar's type code and range. Fills spans[i] for every argument i (the caller provides
// num_args entries). Returns 0, or a KilnErrorCode (kKilnErrorType for the count, a type code or
// a dtype; kKilnErrorValue for the rest) with a last-error message that names the function, the
// argument, what was expected and what was found. Reads only the DLTensor headers, never data.
int check_arguments(const KilnFuncSpec& spec, const KilnValue* args, const int32_t* type_codes,
                    int32_t num_args, ByteSpan* spans);

}  // namespace runtime
}  // namespace kiln
