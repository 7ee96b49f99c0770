// Buffer storage: set_scope moves an intermediate buffer to another memory scope, and
// storage_align pads a dimension's stride (to avoid shared-memory bank conflicts). Both change
// the buffer's declaration only; loops and blocks are unchanged.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Sets the storage scope of the buffer that the block writes at `buffer_index`:
//   B = T.alloc_buffer((16, 16), "float32")   ==>   B = T.alloc_buffer((16, 16), "float32",
//                                                                      scope="shared")
// Every use of the buffer in the function names the new declaration.
// Preconditions:
//  1. The block writes at least buffer_index + 1 buffers (BufferIndexOutOfRangeError).
//  2. The scope is "global", "shared" or "local" (InvalidStorageScopeError).
//  3. The buffer is allocated in the function, not a parameter (FunctionParamBufferError).
void set_scope(Schedule& sch, const RV& block, int64_t buffer_index,
               const std::string& storage_scope);

// Pads the stride of dimension `axis` of the buffer that the block writes at `buffer_index` so
// that stride % factor == offset, keeping the strides of the inner dimensions:
//   B = T.alloc_buffer((16, 16), "float32")  ==>  storage_align(b, 0, axis=0, factor=8, offset=1)
//   B = T.alloc_buffer((16, 16), "float32", strides=(17, 1))
// The alignment is written into the buffer's strides, which the lowering honours, so no later
// pass is involved. `axis` may be negative (counted from the last dimension).
// Preconditions:
//  1. The block writes at least buffer_index + 1 buffers (BufferIndexOutOfRangeError).
//  2. The buffer is allocated in the function, not a parameter (FunctionParamBufferError).
//  3. -ndim <= axis < ndim, factor > 0 and 0 <= offset < factor (InvalidStorageAlignError).
//  4. No dimension outside `axis` is padded already: its stride would have to be recomputed
//     without knowing its alignment, so align the inner dimensions first
//     (StorageAlignOrderError).
void storage_align(Schedule& sch, const RV& block, int64_t buffer_index, int64_t axis,
                   int64_t factor, int64_t offset);

}  // namespace kiln::schedule
