// Inlining: compute_inline substitutes a producer's expression into its consumers, and
// reverse_compute_inline folds a consumer's expression into its producer. Either removes one
// block and the intermediate buffer between the two.
#pragma once

#include "kiln/schedule/schedule.h"

namespace kiln::schedule {

// Replaces every load of the buffer that `block` writes by the block's expression, with its
// iterators replaced by the load's indices, then removes the block, the loops that held only
// it, and the buffer's allocation:
//   with T.block("B"): B[vi, vj] = A[vi, vj] * 2.0           with T.block("C"):
//   with T.block("C"): C[vi, vj] = B[vi, vj] + 1.0   ==>       C[vi, vj] = A[vi, vj] * 2.0 + 1.0
// The read regions of the blocks that read the buffer are updated (what the block read, at the
// indices of their loads).
// Preconditions:
//  1. The scope of the block is a stage pipeline (NotStagePipelineError).
//  2. The block is not an output block: it writes only buffers its scope allocates
//     (OutputBlockError).
//  3. The block is a complete block (NotCompleteBlockError).
//  4. Its body is a single store `B[v0, v1, …] = f(…)` whose indices are distinct iterators of
//     the block, all of them, and it has no init (BodyAnalysisError).
//  5. The buffer is accessed only by loads and stores, never through its data pointer
//     (OpaqueAccessError).
//  6. Every load of the buffer has scalar indices (not the vector operand of a tensorized
//     block) (VectorAccessError).
void compute_inline(Schedule& sch, const RV& block);

// Folds `block`, a consumer `C[g(v)] = h(B[f(v)], …)` of its single producer `B[w] = e(w)`, into
// the producer, which then writes C directly, and removes the consumer, the loops that held only
// it, and buffer B's allocation:
//   with T.block("B"): B[vi, vj] = A[vi, vj] + 1.0           with T.block("B"):
//   with T.block("C"): C[vi, vj] = T.max(B[vi, vj], 0.0) ==>   C[vi, vj] = T.max(A[vi, vj] + 1.0,
//                                                                                0.0)
// The consumer's iterators become the inverse of f applied to the producer's iterators; where
// that may leave the consumer's domain, the producer gets a predicate that keeps it inside.
// Preconditions:
//  1. The scope of the block is a stage pipeline (NotStagePipelineError).
//  2. The block is a complete block (NotCompleteBlockError).
//  3. Its body is a single store whose value reads one element of the producer's buffer (every
//     load of it at the same indices, each replaced by the producer's expression), and whose
//     store indices do not load it (BodyAnalysisError).
//  4. It has exactly one producer in its scope; that producer is a complete block whose only
//     consumer is this block (NonSingleProducerError), and whose body is a single store
//     `B[w0, w1, …] = e` with distinct iterators, all of them, as indices (BodyAnalysisError).
//  5. The producer is not an output block (OutputBlockError).
//  6. The indices f of the load are a bijective affine map of the block's iterators
//     (NotBijectiveAffineIndexError).
//  7. The block's predicate holds wherever its iterators are inside their domains
//     (ConsumerPredicateError).
//  8. Buffer B is accessed only by loads and stores (OpaqueAccessError).
void reverse_compute_inline(Schedule& sch, const RV& block);

// Whether compute_inline / reverse_compute_inline would succeed; changes nothing and records
// nothing.
bool can_compute_inline(Schedule& sch, const RV& block);
bool can_reverse_compute_inline(Schedule& sch, const RV& block);

}  // namespace kiln::schedule
