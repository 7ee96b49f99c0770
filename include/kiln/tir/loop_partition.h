// Lowering pass loop_partition: takes the bound checks of a loop nest (a non-divisible split's,
// a triangular mask's) out of the steady-state loops, and drops the iterations they disable.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Splits a loop whose body checks an affine bound on the loop variable into up to three parts:
// where the check provably holds for every iteration of the loops inside (the check is removed
// there), where it provably fails for every one (the check takes its else branch there: an
// if statement its else case or nothing, an if_then_else call its false value; a part left
// without effect is not emitted), and the part between them, which keeps the check. Run on a
// flat loop program (after flatten_buffers and simplify).
//
// Candidates are the conditions of IfThenElse statements and the conditions of if_then_else calls
// that are marked `likely`; a condition is split at `&&` and `likely` is looked through. A part
// `a < b` (or <=, >, >=) of integers is used for a loop v when it is affine in v with a constant
// coefficient k, and affine with constant coefficients in the loop variables between v and the
// check (whose ranges must not depend on v); other variables (outer loops, shape variables) may
// appear anywhere. Writing the part as `k*v + h >= 0`, the least and the greatest value of h
// over the inner loops give the split points, constants or expressions such as floordiv(n, 8)
// or of an outer loop's variable: for k < 0 the check holds on the first part and fails on the
// last, for k > 0 the other way round. Parts with the same k and the same least and greatest h
// (one bound checked by a tile's init, update and write-back over inner loops of other names)
// split the loop at the same points and are decided together. The outermost loop whose variable
// a part depends on is split first; the steady part is then searched again (for the other bound
// of a two-sided check). The checked part is not split again on the same part, but the loops inside
// it are, unless it is one iteration: that is peeled (its loop variable replaced by the value) and
// keeps the check in its loops. A part that is provably empty is not emitted; nothing is split
// when neither a steady part nor a failing part would remain. Vectorized, unrolled and GPU
// thread loops are not split (their bodies are searched): their extents stay constants. Nor is
// a loop at a split point that depends on a threadIdx variable when its body may synchronize
// the block's threads (it holds a thread loop or accesses "shared" memory): every thread must
// run such a loop equally often. The copied parts get fresh variables for the loops and lets
// they define.
//
//   for io in range(13):                          for io in range(12):
//     for ii in range(8):                           for ii in range(8):
//       if likely(io * 8 + ii < 100):      =>         B[io * 8 + ii] = A[io * 8 + ii]
//         B[io * 8 + ii] = A[io * 8 + ii]         for ii in range(8):
//                                                   if likely(12 * 8 + ii < 100):
//                                                     B[12 * 8 + ii] = A[12 * 8 + ii]
//
// A lower triangle (a causal mask): rows 0-6 are checked, and in them the columns after the
// diagonal fail the check and are gone; row 7 sees every column.
//
//   for i in range(8):                            for i in range(7):
//     for j in range(8):                   =>       for j in range(i + 1):
//       if j <= i:                                    B[i * 8 + j] = A[i * 8 + j]
//         B[i * 8 + j] = A[i * 8 + j]             for i in range(7, 8):
//                                                   for j in range(8):
//                                                     B[i * 8 + j] = A[i * 8 + j]
//
// Returns `func` itself when no loop is split. Tested by tests/cpp/tir/loop_partition_test.cc and
// tests/python/test_lower_loop_passes.py.
ir::Ref<ir::PrimFunc> loop_partition(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
