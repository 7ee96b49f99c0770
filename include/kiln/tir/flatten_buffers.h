// Lowering pass flatten_buffers: every buffer access becomes a one-dimensional access.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Replaces every multi-dimensional buffer in the body by a one-dimensional buffer that shares
// its data variable (so its storage), with one extent covering every element and no strides
// or offset, and rewrites each access to the element offset: row-major over the shape, or the
// sum of index * stride when the buffer has strides, plus its elem_offset. A vector (Ramp) last
// index stays a vector: A[i, ramp(j, 1, 8)] of a (M, N) buffer becomes A[ramp(i * N + j, 1, 8)].
// Allocate nodes allocate the flat buffer. The PrimFunc's buffer_map keeps the original
// parameter buffers, which describe the arguments. Offsets are computed in int32 only when the
// buffer provably spans at most INT32_MAX elements (a constant shape that small, or bounds of
// its symbolic extents that say so), else in int64; an index computed in a narrower type is
// redone in int64 (i * 100000 + j does not wrap in int32 first).
//
// Blocks must be gone (run lower_opaque_block first): a block is a kValue error. Returns `func`
// itself when every buffer is already one-dimensional and compact.
//
//   def f(A: Buffer((4, 8)), B: Buffer((4, 8))):      def f(A: Buffer((4, 8)), B: Buffer(...)):
//     for i, j in grid(4, 8):                    =>     for i, j in grid(4, 8):
//       B[i, j] = A[i, j]                                 B_1[i * 8 + j] = A_1[i * 8 + j]
//
// Tested by tests/cpp/tir/flatten_buffers_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> flatten_buffers(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
