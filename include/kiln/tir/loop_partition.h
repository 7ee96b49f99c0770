// Lowering pass loop_partition: takes the bound check that a non-divisible split leaves inside a
// loop nest out of the steady-state loop.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Splits a loop whose body checks an affine bound on the loop variable into the part where the
// check provably holds for every iteration of the loops inside (the check is removed there) and
// the part that keeps it. Run on a flat loop program (after flatten_buffers and simplify).
//
// Candidates are the conditions of IfThenElse statements and the conditions of if_then_else calls
// that are marked `likely`; a condition is split at `&&` and `likely` is looked through. A part
// `a < b` (or <=, >, >=) of integers is used for a loop v when it is affine in v with a constant
// coefficient k, and affine with constant coefficients in the loop variables between v and the
// check (whose ranges must not depend on v); other variables (outer loops, shape variables) may
// appear anywhere. Writing the part as `k*v + h >= 0`, the least value of h over the inner loops
// gives the split point, a constant or an expression such as floordiv(n, 8): for k < 0 the check
// holds on the first part (the tail keeps it), for k > 0 on the second. The outermost loop
// whose variable a part depends on is split first; the steady part is then searched again (for
// the other bound of a two-sided check), the checked part is not split again on the same part.
// A checked part of one iteration is peeled (its loop variable replaced by the value). A part
// that is provably empty is not emitted; nothing is split when the steady part would be empty.
// Vectorized and GPU thread loops are not split (their bodies are searched), nor is a loop at a
// split point that depends on a threadIdx variable when its body may synchronize the block's
// threads (it holds a thread loop or accesses "shared" memory): every thread must run such a
// loop equally often. The copied part gets fresh variables for the loops and lets it defines.
//
//   for io in range(13):                          for io in range(12):
//     for ii in range(8):                           for ii in range(8):
//       if likely(io * 8 + ii < 100):      =>         B[io * 8 + ii] = A[io * 8 + ii]
//         B[io * 8 + ii] = A[io * 8 + ii]         for ii in range(8):
//                                                   if likely(12 * 8 + ii < 100):
//                                                     B[12 * 8 + ii] = A[12 * 8 + ii]
//
// Returns `func` itself when no loop is split. Tested by tests/cpp/tir/loop_partition_test.cc and
// tests/python/test_lower_loop_passes.py.
ir::Ref<ir::PrimFunc> loop_partition(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
