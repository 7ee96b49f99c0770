// Lowering pass simplify: the arithmetic analyzer's statement simplifier as a pass.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Simplifies every expression of the body with what is known where it appears (loop ranges,
// branch conditions, let values, asserted conditions; see arith::Analyzer::simplify) and drops
// the branch of an IfThenElse whose condition is decided; then removes what is left without
// effect (T.evaluate of a constant, and loops, conditions, allocations and lets around only
// that). Symbolic shape variables are known to be non-negative. Returns `func` itself when
// nothing simplifies.
//
//   for i in range(8):                 for i in range(8):
//     if i < 10:                  =>     B[i] = A[i]
//       B[i * 8 // 8] = A[i]
//
// Tested by tests/cpp/tir/simplify_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> simplify(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
