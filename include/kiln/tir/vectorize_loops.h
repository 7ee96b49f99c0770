// Lowering pass vectorize_loops: turns loops of kind vectorized into vector code (Ramp,
// Broadcast, vector loads and stores), or into serial loops that say why they could not be.
#pragma once

#include <vector>

#include "kiln/ir/function.h"

namespace kiln::tir {

// Replaces each For of kind kVectorized with a constant extent L by its body computed on L lanes
// at once: the loop variable becomes Ramp(min, 1, L); every expression that depends on it is
// widened lane-wise (loop-invariant operands are broadcast; `ramp + x` and `ramp * c` stay
// ramps); loads and stores get vector indices; if_then_else with a condition that varies across
// lanes becomes a Select when both arms are safe to evaluate on every lane (no load, or loads
// provably in bounds), and otherwise keeps the loads that may be out of bounds to the lanes
// that pick their arm: an arm that is such a load stays the then-arm of a vector if_then_else
// (its condition negated for the else-arm), which the code generator loads only on the lanes
// where the condition holds (a masked load or gather), and a load inside an arm becomes such
// an if_then_else of the arm's condition and 0 (nested ones of both conditions), e.g. a
// padded convolution's row `if_then_else(1 <= x and x < 57, data[x - 1], 0)`. An if statement
// without else whose condition varies across lanes and whose branch is one store to a buffer
// private to this thread (allocated inside the innermost parallel loop around it, or in the
// function when there is none; on a GPU, "local" memory) becomes a store on every lane of
// select(condition, value, the old value), when every lane's index is in bounds and the value is
// safe to evaluate on every lane (the partial tile of a masked register tile), or with masked
// loads, when its loads that may be out of bounds vary across lanes (they are masked by the
// condition: the partial last columns of a register tile). An if statement without else whose
// condition is a conjunction of terms that vary across lanes and terms that do not becomes a
// scalar if of the latter around the vector if of the former, and the branches of a scalar if
// are vectorized knowing its condition (a broadcast load that the scalar test keeps in bounds
// needs no mask: the partial last row of a register tile). Where a load the same on every lane
// may still be out of bounds and each term of the condition is a bound affine in the loop
// variable, all held by a first part of the lanes (or all by a last part), the store goes under
// a scalar test of the condition at the first (last) lane: where it holds, that lane runs the
// store in the loop, so the load is in bounds (the row test of a partial tile that a fused loop
// keeps inside the vector loop). A guarded store to any other
// buffer stays an if statement, whose vector condition the code generator turns into a store
// of only the lanes where it holds (a masked store or scatter), the loads of the value that may
// be out of bounds masked by the condition too (the tail of a loop split by a factor that does
// not divide it: `if i < 100: B[i] = A[i]`), when the store's indices are safe to evaluate on
// every lane. Such an if around more than one store, its condition reading no memory, goes onto
// each: into each statement of a sequence, inside an if without else that does not vary, and
// joined to the condition of one that does (that tail around a reduction block's init and
// update: `if i < 100: (if k == 0: C[i] = 0); C[i] = C[i] + A[i, k]`). Serial and unrolled
// loops inside are vectorized through when their range does not vary across lanes; a buffer
// allocated inside gets one copy per lane (its accesses must not vary across lanes). A loop of
// extent 1 becomes its body at the loop's min.
//
// When the body cannot be vectorized the loop becomes kSerial with the annotation
// "kiln.vectorize_fallback" holding the reason, and the function's attribute
// "kiln.vectorize_fallbacks" lists every such loop: a JSON array of {"loop": name, "reason":
// text} in the order the loops were met, absent when every loop was vectorized. The build
// driver reports it as warnings (later passes may unroll or remove the serial loop itself).
// Reasons: an extent that is not a constant (or not positive); a store
// whose index does not vary across lanes (e.g. the reduction `C[0] = C[0] + A[i]`) or whose
// vector index is not a ramp with a nonzero stride (distinct addresses); a buffer both stored and
// accessed at different indices in the body (lanes could depend on each other); an if statement
// (but the stores above) or assert whose condition varies across lanes; an inner loop whose
// range varies across lanes, or of kind parallel, vectorized or thread-bound; if_then_else whose
// arms may load out of bounds and cannot be masked (a load inside an arm that does not vary
// across lanes, indices that load out of bounds themselves, or no masked loads on the target);
// calls with side effects (call_extern, storage_sync) or extern calls with
// arguments that vary across lanes; vector expressions already in the body; blocks.
//
// The pass trusts the schedule that the loop is data parallel, as the `vectorize` primitive
// checks; the cases above are the ones that lowering can still produce.
//
//   for i in T.vectorized(8):           =>    B[T.Ramp(0, 1, 8)] = A[T.Ramp(0, 1, 8)] +
//     B[i] = A[i] + c                                                T.Broadcast(c, 8)
//
// Returns `func` itself when it has no vectorized loop. Tested by
// tests/cpp/tir/vectorize_loops_test.cc and tests/python/test_lower_loop_passes.py.
ir::Ref<ir::PrimFunc> vectorize_loops(const ir::Ref<ir::PrimFunc>& func);

// The same for a code generator whose vectors have only the lane counts in `lanes` (a GPU
// language's vector types: CUDA's float2/float4, OpenCL's 2, 4, 8 and 16): a vectorized loop of
// another extent stays serial, its reason naming the lane counts. An empty list allows any.
// Without `masked_memory` (C's ?: on vectors evaluates both arms on every lane, and C has no
// masked stores), a vector if_then_else guarding a load that may be out of bounds, and an if
// statement whose condition varies across lanes (but the private store), keep their loop
// serial. Tested by
// tests/cpp/tir/vectorize_loops_test.cc.
ir::Ref<ir::PrimFunc> vectorize_loops(const ir::Ref<ir::PrimFunc>& func,
                                      const std::vector<int>& lanes, bool masked_memory = false);

}  // namespace kiln::tir
