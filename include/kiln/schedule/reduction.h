// Reduction primitives: rfactor, which splits a reduction into a partial reduction over an
// intermediate buffer and a final one, and decompose_reduction, which moves a reduction's init
// into a block of its own. Both work on blocks with an init and an update `C = f(C, x)`.
#pragma once

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Factorizes the reduction that `loop` takes part in: a new block "<name>_rf" reduces into an
// intermediate buffer "<buffer>_rf" that has one more dimension, at position `factor_axis`,
// indexed by `loop`; the original block then reduces that dimension into the output. The
// rfactor block stays under the original loops; the write-back block gets copies of the loops
// that its iterators use, placed after the original loop nest:
//   for i, k_0, k_1 in T.grid(16, 2, 4):         for i, k_0, k_1 in T.grid(16, 2, 4):
//     with T.block("B"):                            with T.block("B_rf"):
//       vi, vk = T.axis.remap("SR", [i, k_0*4+k_1])   vk_1, vi, vk_0 = T.axis.remap("SSR", …)
//       with T.init(): B[vi] = 0.0        ==>          with T.init(): B_rf[vi, vk_1] = 0.0
//       B[vi] = B[vi] + A[vi, vk]                      B_rf[vi, vk_1] += A[vi, vk_0*4 + vk_1]
//                                                  for i, k_1 in T.grid(16, 4):
//                                                    with T.block("B"):
//                                                      vk_1, vi = T.axis.remap("RS", [k_1, i])
//                                                      with T.init(): B[vi] = 0.0
//                                                      B[vi] = B[vi] + B_rf[vi, vk_1]
// (rfactor(k_1, factor_axis=1)). The combiner is recognized from the update and the init
// (ir::match_block_reducer): sum (C + x, init 0), product (C * x, init 1), max (max(C, x), init
// the lowest value) and min, or a reduction of several values (argmax's index and value), which
// gets one intermediate buffer per value and updates them together as the block did.
// Preconditions:
//  1. Exactly one block is under `loop`, and it is the only block under the outermost of its
//     loops, so that the write-back can follow the loop nest (NotSingleChildBlockError).
//  2. The block has an init and its body is one store `C[idx] = f(C[idx], x)` whose init
//     stores to the same element, or the LetStmts and stores of several values
//     (NotReductionBlockError).
//  3. f and the init value form one of the four combiners, or each value's update is a select
//     or one of them over the stored values and the values combined (NoMatchedReducerError).
//  4. The block's bindings are affine in its loops (NotAffineBindingError).
//  5. `loop` binds a reduce iterator of the block and no spatial one, and no loop binds
//     iterators of both kinds (LoopPropertyError).
//  6. -(ndim + 1) <= factor_axis <= ndim for the output's ndim (FactorAxisOutOfRangeError).
//  7. Each condition of the block's predicate over reduce loops is a comparison that loosens
//     as those loops shrink (the bounds checks of split), so that the write-back block can
//     read exactly the factor values that the rfactor block wrote (PredicateNotSupportedError).
// Returns the rfactor block.
RV rfactor(Schedule& sch, const RV& loop, int factor_axis);

// Moves the init of a reduction block into a new block "<name>_init" placed right before
// `loop`, under copies of the loops below `loop` that the block's spatial iterators use; the
// block itself loses its init:
//   for i, k in T.grid(16, 8):                  for i in range(16):
//     with T.block("B"):                          with T.block("B_init"):
//       vi, vk = T.axis.remap("SR", [i, k])         vi = T.axis.spatial(16, i)
//       with T.init(): B[vi] = 0.0        ==>       B[vi] = 0.0
//       B[vi] = B[vi] + A[vi, vk]                 for k in range(8):
//                                                   with T.block("B"): … B[vi] = B[vi] + …
// (decompose_reduction(B, k)). Conditions of the block's predicate that involve only loops the
// init block does not copy (reduce loops) are dropped: the init runs for every output point. A
// condition over both kinds is taken at the reduction's first step, where the block ran its init
// (the tail of a split that does not divide the reduction, `k_0 * 16 + k_1 < 197`, holds for
// every k_1 at k_0 = 0: no condition).
// Preconditions:
//  1. The block has an init (NotReductionBlockError).
//  2. `loop` is one of the block's loops (LoopPositionError).
//  3. No loop above `loop` binds a reduce iterator of the block, and a condition of the
//     predicate that mixes copied loops with loops that are not copied can be taken at the first
//     step: the loops not copied at their minimum put every reduce iterator at the minimum of its
//     domain (LoopHeightError).
// Returns the init block.
RV decompose_reduction(Schedule& sch, const RV& block, const RV& loop);

}  // namespace kiln::schedule
