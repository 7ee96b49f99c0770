// Buffer storage: set_scope moves an intermediate buffer to another memory scope, and
// storage_align pads a dimension's stride (to avoid shared-memory bank conflicts). Loops and
// accesses are unchanged.
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
//  2. The scope is "global", "shared", "shared.dyn", "local" or "warp" (InvalidStorageScopeError).
//  3. The buffer is allocated in the function, not a parameter (FunctionParamBufferError).
void set_scope(Schedule& sch, const RV& block, int64_t buffer_index,
               const std::string& storage_scope);

// Pads the stride of dimension `axis` of the buffer that the block writes at `buffer_index` so
// that stride % factor == offset (to avoid shared-memory bank conflicts), as TVM does: the block
// records the alignment in its "kiln.storage_align" annotation (kiln/ir/storage_align.h), and
// the lowering pass compact_buffer_allocation applies it to the buffer's final shape, so that a
// tile compacted out of the buffer gets the padded pitch of its own rows:
//   B = T.alloc_buffer((16, 16))    ==>    with T.block("B"):
//   with T.block("B"): ...                   T.block_attr({"kiln.storage_align": "0:0:8:1"})
//                                            ...            (lowered: strides (17, 1))
// `axis` may be negative (counted from the last dimension); aligning the same axis again
// replaces its alignment; several axes combine, inner dimensions padded first.
// Preconditions:
//  1. The block writes at least buffer_index + 1 buffers (BufferIndexOutOfRangeError).
//  2. The buffer is allocated in the function, not a parameter (FunctionParamBufferError).
//  3. -ndim <= axis < ndim, factor > 0 and 0 <= offset < factor (InvalidStorageAlignError).
void storage_align(Schedule& sch, const RV& block, int64_t buffer_index, int64_t axis,
                   int64_t factor, int64_t offset);

}  // namespace kiln::schedule
