// Loop transformations: split, fuse, reorder and add_unit_loop. They change the loop nest above
// blocks and rewrite the blocks' iterator bindings; the blocks themselves are unchanged.
#pragma once

#include <optional>
#include <variant>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// A split factor: a constant, a sampled value (ExprRV), or none (inferred).
using SplitFactor = std::variant<std::monostate, int64_t, RV>;

// Splits a loop into nested loops whose extents are `factors`, outermost first:
//   for i in range(100):            for i_0, i_1 in T.grid(4, 32):
//     B[i] = …              ==>       with T.block("B"): T.where(i_0 * 32 + i_1 < 100)
//                                       vi = i_0 * 32 + i_1 …
// At most one factor may be None; it is inferred as ceil(extent / product of the others).
// When the product is not the extent, a predicate keeps the blocks inside the original range.
// Preconditions:
//  1. At most one factor is None, and every given factor is a positive integer
//     (InvalidSplitFactorsError).
//  2. When no factor is None, the product of the factors is at least the loop's extent
//     (InvalidSplitFactorsError).
// The new loops are serial and carry no annotations. Returns the new loops.
std::vector<RV> split(Schedule& sch, const RV& loop, const std::vector<SplitFactor>& factors,
                      bool preserve_unit_iters = true);

// Fuses directly nested loops into one whose extent is the product of theirs:
//   for i, j in T.grid(8, 16):  ==>  for i_j_fused in range(128):
//                                       vi = i_j_fused // 16; vj = i_j_fused % 16
// Preconditions:
//  1. At least one loop is given, each once (InvalidLoopsError).
//  2. Each loop is the only statement in the body of the previous one (LoopsNotNestedError).
// Returns the fused loop.
RV fuse(Schedule& sch, const std::vector<RV>& loops, bool preserve_unit_iters = true);

// Reorders loops of one nest: the given loops, which lie on one path of directly nested loops,
// take the positions that loops of the set occupy, in the given order; the other loops of the
// path keep their places.
// Preconditions:
//  1. Each loop is given once (InvalidLoopsError).
//  2. The loops are on one chain: from the outermost to the innermost of them, each loop is the
//     only statement in its parent's body (LoopsNotNestedError).
//  3. No given loop binds both a spatial and a reduction iterator of a block under it (after a
//     fuse of such loops), since moving it could run a reduction step before the init of its
//     output point (LoopIterTypeError).
//  4. No loop's extent depends on a loop that would move outside of it (LoopDependenceError).
void reorder(Schedule& sch, const std::vector<RV>& ordered_loops);

// Adds a loop of extent 1 directly above a block (inside the block's loops) or above a loop:
//   with T.block("B"):        ==>   for u in range(1):
//     B[()] = B[()] + A[vk]           with T.block("B"): B[()] = B[()] + A[vk]
// No iterator uses the new loop; it gives a block without spatial loops (a reduction to one
// value, a 0-d element-wise block) a loop to bind to blockIdx.x on GPU targets.
// Preconditions:
//  1. A block given is not the root block (RootBlockError).
// Returns the new loop.
RV add_unit_loop(Schedule& sch, const RV& block_or_loop);

}  // namespace kiln::schedule
