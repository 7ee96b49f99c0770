// Compute location: compute_at moves a producer under a loop of its consumers, and
// reverse_compute_at moves a consumer under a loop of its producers; each regenerates the loops
// of the moved block so that one iteration of the target loop computes exactly the region that
// is needed there (produced there, for the reverse). sample_compute_location draws a location
// for the tuner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Moves `block` under `loop`, in front of the first of its consumers there, and regenerates its
// loops to cover the region its consumers read in one iteration of `loop`:
//   for i, j in T.grid(16, 12):                 for i_0 in range(4):
//     with T.block("B"): B[vi, vj] = …            for ax0, ax1 in T.grid(4, 12):
//   for i_0, i_1, j in T.grid(4, 4, 12):   ==>      with T.block("B"): vi = i_0 * 4 + ax0 …
//     with T.block("C"): C[vi, vj] = B[vi, vj]    for i_1, j in T.grid(4, 12):
//                                                   with T.block("C"): …
// The region is the union over the consumers of their reads relaxed over the loops inside
// `loop`. An iterator indexed as `v + c` in a dimension of a written buffer ranges over that
// dimension of the region (less c); other iterators, reduction ones included, keep their whole
// domain. The new loops are `ax0`, `ax1`, … from 0 with the iterator bound to min + ax; a loop
// of extent 1 is left out unless `preserve_unit_loops`. Where the region may leave an
// iterator's domain, the block gets a predicate that keeps it inside. Loops left empty by the
// move are removed (their handles become stale).
// Preconditions:
//  1. The block and the loop are in one function and one scope, neither lies in the init of
//     the scope block, and the loop is not an ancestor of the block (NotInSameScopeError).
//  2. The scope is a stage pipeline (NotStagePipelineError).
//  3. The block is a complete block or a reduction block (NotCompleteOrReductionBlockError).
//  4. Every block of the outermost loop nest around the block, within the scope, is a complete
//     or a reduction block (NotCompactDataflowError).
//  5. The block is not an output block: it writes only buffers its scope allocates
//     (OutputBlockError).
//  6. Every consumer of the block is under the loop (NotAllRequiredBlocksAreVisitedError).
//  7. The block's predicate is implied by its iterators lying in their domains, since the new
//     loops keep only those (BlockPredicateError).
// In a stage pipeline the producers of the block that are under the loop come before its
// consumers there, so the block always has a place between them.
// With a location handle from sample_compute_location, "root" (-1) leaves the block where it is
// and "inline" (-2) inlines it (compute_inline); either is recorded as compute_at.
void compute_at(Schedule& sch, const RV& block, const RV& loop, bool preserve_unit_loops = false);

// The mirror of compute_at: moves `block` (a consumer) under `loop`, after the last of its
// producers there, and regenerates its loops to cover what its producers write in one
// iteration of `loop`:
//   for i_0, i_1, j in T.grid(4, 4, 12):        for i_0 in range(4):
//     with T.block("B"): …                        for i_1, j in T.grid(4, 12):
//   for i, j in T.grid(16, 12):            ==>      with T.block("B"): …
//     with T.block("C"): C[vi, vj] = B[vi, vj]    for ax0, ax1 in T.grid(4, 12):
//                                                   with T.block("C"): vi = i_0 * 4 + ax0 …
// An iterator indexed as `v + c` in a dimension of a read of a produced buffer ranges over
// that dimension of the produced region (less c; the intersection over such reads); other
// iterators keep their whole domain.
// Preconditions:
//  1.–4. As compute_at (NotInSameScopeError, NotStagePipelineError,
//     NotCompleteOrReductionBlockError, NotCompactDataflowError), and its predicate condition
//     (BlockPredicateError). An output block may move.
//  5. Every producer of the block is under the loop (NotAllRequiredBlocksAreVisitedError).
//  6. No consumer of the block outside the loop comes before it (ConsumerBeforeLoopError).
//  7. In one iteration of the loop the block reads only what its producers write in that
//     iteration (RegionNotCoverableError).
//  8. Each reduction iterator keeps its whole domain: a reduction cannot be split across
//     iterations of the loop (PartialReductionError).
//  9. Over all iterations of the loop (and the loops around it) each spatial iterator still
//     reaches its whole domain: a padding block whose border no producer writes cannot move
//     (RegionNotCoverableError).
// 10. In one iteration of the loop each producer writes a contiguous range of each dimension
//     (no stride), since the block reads its hull (RegionNotCoverableError).
// 11. A producer's predicate cannot be false for a whole iteration of the loop unless the loops
//     it tests also index what the producer writes (RegionNotCoverableError).
// With a location handle from sample_compute_location, "root" (-1) leaves the block where it is
// and "inline" (-2) inlines it into its producer (reverse_compute_inline).
void reverse_compute_at(Schedule& sch, const RV& block, const RV& loop,
                        bool preserve_unit_loops = false);

// Whether compute_at / reverse_compute_at would succeed; changes nothing and records nothing.
bool can_compute_at(Schedule& sch, const RV& block, const RV& loop,
                    bool preserve_unit_loops = false);
bool can_reverse_compute_at(Schedule& sch, const RV& block, const RV& loop,
                            bool preserve_unit_loops = false);

// The decisions sample_compute_location can take for `block` (see there), in increasing order
// but for inline (-2), which comes first when it is one: [-2,] -1, then the loops' numbers.
// Changes nothing and records nothing; the tuner's mutators use it to pick another location.
std::vector<int64_t> compute_location_candidates(Schedule& sch, const RV& block);

// A uniform draw among the decisions sample_compute_location can take for `block` that `accept`
// also accepts, without listing them: the locations in an order drawn with `next_random`, the
// first that qualifies (none when none does). Planning a move is the expensive step, and most
// locations of a tiled nest qualify. Changes nothing and records nothing.
std::optional<int64_t> draw_compute_location(Schedule& sch, const RV& block,
                                             const std::function<uint64_t()>& next_random,
                                             const std::function<bool(int64_t)>& accept);

// Draws a compute location of `block` uniformly among those where it can go (and that the
// schedule's location filter accepts, Schedule::set_location_filter) and returns it as a loop
// handle for compute_at. The decision (recorded in the trace) is an integer:
//   -2   inline: compute_at inlines the block (only when compute_inline would succeed);
//   -1   root: compute_at leaves the block where it is (always a candidate);
//   k>=0 the k-th loop, in pre-order, of the loops of the block's scope (not inside a nested
//        block), when compute_at of the block under it would succeed.
// For -1 and -2 the handle names no loop of the function: compute_at and reverse_compute_at
// recognise it by the sample_compute_location instruction of the trace that made it, and any
// other primitive given it raises StaleHandleError.
// Preconditions:
//  1. A given decision is one of the candidates above (InvalidDecisionError).
RV sample_compute_location(Schedule& sch, const RV& block,
                           const std::optional<int64_t>& decision = std::nullopt);

}  // namespace kiln::schedule
