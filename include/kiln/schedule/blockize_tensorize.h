// blockize, which wraps the loops under a loop into a new outer block, and tensorize, which
// replaces such a block's body by the implementation of a tensor intrinsic (tensor_intrin.h)
// after checking that the body computes what the intrinsic's description computes.
#pragma once

#include <string>

#include "kiln/schedule/schedule.h"
#include "kiln/schedule/tensor_intrin.h"

namespace kiln::schedule {

// Makes the subtree under `loop` the body of a new block "<name>_o". Each binding of the block
// below is divided, through its affine form, into an outer part over the loops above `loop` and
// an inner part over `loop` and the loops below it (`binding = outer * inner_extent + inner`);
// the outer block iterates the outer parts, the inner block keeps its iterators for the inner
// parts and reads the outer ones:
//   for i_0, i_1 in T.grid(4, 16):              for i_0 in range(4):
//     with T.block("B"):                          with T.block("B_o"):
//       vi = T.axis.spatial(64, i_0*16 + i_1)       vi_o = T.axis.spatial(4, i_0)
//       B[vi] = A[vi] * 2.0              ==>        T.reads(A[vi_o*16 : vi_o*16 + 16]) …
//                                                   for i_1 in range(16):
//                                                     with T.block("B"):
//                                                       vi_i = T.axis.spatial(16, i_1)
//                                                       B[vi_o*16 + vi_i] = A[vi_o*16 + vi_i] * 2.0
// (blockize(i_1)). An iterator whose binding has no inner part moves to the outer block; one
// with no outer part stays whole in the inner block. The outer block reads and writes what the
// inner block touches over all inner iterations. A reduction's init moves to the outer block,
// over copies of the inner loops that its spatial iterators use (block "<name>_init").
// Preconditions:
//  1. Exactly one block is under `loop`, directly (not inside another block)
//     (NotSingleChildBlockError).
//  2. The block's bindings are affine in its loops (NotAffineBindingError).
//  3. Each binding divides: its terms over the inner loops form a dense mixed-radix number
//     (scales 1, e0, e0*e1, …) below every term over the outer loops, which are multiples of the
//     inner extent; an iterator with both parts has a domain starting at 0; no condition of the
//     predicate mixes inner loops that the init keeps with others, and a condition over inner
//     loops uses outer loops only where an outer iterator is bound to them (or they have
//     extent 1) (SubspaceNotDivisibleError).
// Returns the new outer block.
RV blockize(Schedule& sch, const RV& loop);

// Replaces the body of a block by the implementation of the tensor intrinsic `intrin_name`.
// Given a loop, blockizes it first (as above, with its errors). The block's body must match the
// intrinsic's description: the same loops (extents), one block with the same iterators (domains,
// kinds), bindings and predicate, and the same statements and expressions, where each buffer of
// the description stands for the region of an actual buffer that the block reads or writes:
// the description's A[k] matches actual[base + k] for the region's start `base` (aligned on the
// trailing dimensions; leading dimensions of the region have extent 1). The implementation's
// body then replaces the block's body, each of its buffers bound to the same region as the
// description's buffer at the same position; the block keeps its iterators, regions and init.
// Preconditions (besides blockize's):
//  1. The intrinsic is registered (a kValue error listing the registered names).
//  2. The body matches the description; the message says which part differs, showing both
//     sides (TensorizeMismatchError).
//  3. Where the implementation reads a buffer across its dimensions with one flat vector index
//     (e.g. all 64 bytes of a 16x4 tile), the matched region is contiguous: the actual buffer
//     is compact and its trailing dimensions after the first one equal the tile's
//     (TensorizeLayoutError).
//  4. When `target` is given, it has every feature the intrinsic needs (TensorizeTargetError
//     naming the intrinsic, the target and the missing features). Without a target the check
//     waits for kiln.build, which knows it.
// The tensorized block carries the annotation "kiln.tensor_intrin" (the intrinsic's name).
void tensorize(Schedule& sch, const RV& block_or_loop, const std::string& intrin_name,
               const IntrinTarget* target = nullptr);

}  // namespace kiln::schedule
