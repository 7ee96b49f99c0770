// What the rules ask of a block: the kind of each iterator, the loops bound to them, and which
// iterators each buffer access uses. Private to autotune/space/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/schedule/schedule.h"

namespace kiln::autotune {

struct BlockAnalysis {
  // One entry per loop around the block (outermost first): the iterator it is bound to as the
  // iterator's whole binding, or -1 when the loop is not such a loop.
  std::vector<int> loop_iter;
  // Per iterator: whether it is a reduction (else spatial) and the loop bound to it (-1: none).
  std::vector<bool> is_reduce;
  std::vector<int> iter_loop;
  // Per iterator: whether its domain has one value (a kept dimension of a reduction's result).
  std::vector<bool> is_unit;
  // Per read region (in order): the iterators its indices use.
  std::vector<std::vector<bool>> read_uses;
  // Per read region: the iterator its last index is exactly (-1 when it is another expression).
  std::vector<int> read_last_iter;
  // The same of the first write region (-1 without one).
  int write_last_iter = -1;
  bool has_init = false;
  // Every iterator is bound to exactly one loop of constant extent, and every loop to one
  // iterator: the block as te.create_prim_func makes it.
  bool trivial_bindings = false;
  // Writes one buffer, every iterator is spatial, and its body is one store.
  bool spatial = false;
  // A spatial block whose stored value reads each buffer at indices that are its iterators
  // plus constants (element-wise, broadcast, padding): cheap to recompute where it is used.
  bool injective = false;
  // Its stored value reads a buffer inside an if_then_else (a padding block): inlined, the
  // guarded read keeps its consumer's loop from being vectorized.
  bool guarded_read = false;
  // Its stored value calls a math function lowered to a polynomial (exp, log, tanh, erf, ...):
  // inlined into two consumers, it is computed twice.
  bool expensive = false;
  // Writes a parameter of the function (an output).
  bool writes_output = false;
};

// The analysis of the block `name` of function "main" of `sch`.
BlockAnalysis analyze_block(schedule::Schedule& sch, const std::string& name);

// The iterator of `block` that `e` is exactly (its position in iter_vars), or -1.
int iterator_index(const ir::Expr& e, const ir::Block& block);

// Whether an operand of the block's contraction (a read that uses a reduction iterator) leaves
// out a spatial iterator, so that a tile of the output reuses it (A and B of a matmul; not a
// per-row value such as a softmax's maximum, read by its sum, nor a read that leaves out only
// iterators of one value, as a global pooling's input leaves out the unit height and width of
// its result).
bool has_operand_reuse(const BlockAnalysis& a);

// The integer value of annotation `key` of `block`, or `fallback` where it has none (or it is
// not a constant integer): how the rules hand their decisions to postprocessors.
int64_t annotation_or(const ir::Block& block, const char* key, int64_t fallback);

// Whether the block `name` calls an external C function (te.extern): it is fixed, and no rule
// or postprocessor changes it (no tiling, no inlining into or out of it, no compute location).
bool is_extern_block(schedule::Schedule& sch, const std::string& name);
// How often the body of block `name` runs: the product of the extents of the loops around it
// (nullopt where one is not a constant, or there is no such block).
std::optional<double> loop_runs(schedule::Schedule& sch, const std::string& name);

// Whether the reduction block `name` runs each of its iterations twice or more: the loops around
// it iterate at least twice as often as its iterators do, as when compute_at put it under a loop
// of its consumer that its result does not depend on (a row sum under the loop over columns).
// Recomputing a reduction never pays, and such candidates take orders of magnitude longer to
// measure. False for a spatial block (recomputing a halo can pay) and where an extent is not a
// constant.
bool recomputes_reduction(schedule::Schedule& sch, const std::string& name);

// Whether the reduction block `name` sits under a loop that iterates a reduction of another
// block, as when compute_at put rfactor's partial result under the loop of the final reduction
// over those partial results: the partial result is then produced one lane at a time instead
// of as a vector. False for a spatial block (a shared-memory fetch under a reduction loop is
// how GPU tiles are loaded).
bool in_another_reduction_loop(schedule::Schedule& sch, const std::string& name);

// The compute locations of `block` (schedule::compute_location_candidates) but those where it
// would recompute a reduction (recomputes_reduction) or run inside another reduction's loop
// (in_another_reduction_loop).
std::vector<int64_t> useful_compute_locations(schedule::Schedule& sch, const schedule::RV& block);
// Whether `candidate`, a compute location of `block`, is one of those.
bool is_useful_compute_location(schedule::Schedule& sch, const schedule::RV& block,
                                int64_t candidate);

// Where block `name` of function "main" is, when it sits in the root block's scope (as
// te.create_prim_func leaves every stage); nullptr for a block nested in another block, or none.
const schedule::BlockLocation* root_scope_block(schedule::Schedule& sch, const std::string& name);

}  // namespace kiln::autotune
