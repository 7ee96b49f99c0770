// The argument checker: compares the packed arguments of a call with the function's spec before
// the kernel runs, so that generated code can trust every tensor it is given.
#pragma once

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {

// Checks the count, type codes, and each tensor's dtype, ndim, device, shape (binding symbolic
// variables at their first occurrence), strides, data pointer and alignment, and each scalar's
// type code and range. Returns 0, or -1 with a last-error message that names the function, the
// argument, what was expected and what was found. Reads only the DLTensor headers, never data.
int check_arguments(const KilnFuncSpec& spec, const KilnValue* args, const int32_t* type_codes,
                    int32_t num_args);

}  // namespace runtime
}  // namespace kiln
