// The combiner of a reduction block, recognized from its init and update: what rfactor and the
// lowering of cross-thread reductions need to combine partial results of one value (a sum) or
// of several (argmax's index and value).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::ir {

// A reduction block's N stored values B_j[idx] and the combiner of its update
//   B_j[idx] = f_j(B_0[idx], ..., B_{N-1}[idx], y_0, ..., y_{N-1})   (j < N)
// with the init B_j[idx] = e_j. In `combiner`, lhs are the variables x_j that stand for
// B_j[idx], rhs the variables that stand for y_j, result the f_j and identity the e_j.
struct BlockReducer {
  std::vector<Ref<Buffer>> buffers;  // B_j
  std::vector<Expr> indices;         // idx, the same for every value
  Ref<CommReducer> combiner;
  std::vector<Expr> values;  // y_j, over the block's iterators
};

// Why a block is not a reduction BlockReducer describes: it is no reduction of that form
// (kNotReduction), or it is one whose combiner is not recognized (kUnknownCombiner).
struct ReducerMismatch {
  enum Kind { kNotReduction, kUnknownCombiner } kind = kNotReduction;
  std::string why;  // names the block: "block 'B' has no init, so it is not a reduction"
};

// The reducer of `block`, or why there is none. Two forms are recognized:
//  1. One value: the init `C[idx] = c` and the update `C[idx] = f(C[idx], x)` (or f(x, C[idx]))
//     with f one of + * max min and c its identity (0, 1, the lowest value or -inf, the largest
//     value or +inf); x does not read C.
//  2. Several values, as te.create_prim_func writes a tuple reducer: the init stores a constant
//     to each B_j[idx], and the update binds each new value to a LetStmt before it stores them,
//       let t_0 = f_0(...); ...; let t_{N-1} = f_{N-1}(...); B_0[idx] = t_0; ...
//     where f_j is a Select, +, *, max or min with one operand B_j[idx] and the other y_j (which
//     reads no B_k); after y_k and B_k[idx] are replaced by variables, nothing else is left
//     (argmax: f_0 = select(c, y_0, x_0), f_1 = select(c, y_1, x_1), c comparing x and y).
//     The init's constants are taken as the combiner's identity, as te.comm_reducer declares.
// In both, the block has spatial and reduce iterators only, at least one reduce iterator, and
// idx uses none of the reduce iterators. Tested by tests/cpp/ir/block_reducer_test.cc.
std::optional<BlockReducer> match_block_reducer(const Block& block, ReducerMismatch* mismatch);

// f_j(lhs, rhs) for every j: the combiner's results with lhs[j] for x_j and rhs[j] for y_j.
std::vector<Expr> combine(const CommReducer& combiner, const std::vector<Expr>& lhs,
                          const std::vector<Expr>& rhs);

// The elements `indices` of each of `buffers`, as loads.
std::vector<Expr> elements_of(const std::vector<Ref<Buffer>>& buffers,
                              const std::vector<Expr>& indices);

// Stores values[j] to the element places[j] (a BufferLoad) for every j, one after the other (an
// init, or values that read none of the places).
Stmt store_each(const std::vector<Expr>& places, const std::vector<Expr>& values);

// Stores values[j] to the element places[j] (a BufferLoad) for every j, every value computed
// before any store: one BufferStore for one value; for several, each value is bound to a
// LetStmt ("<buffer>_temp") and then stored, as a tuple reduction's update does.
Stmt store_together(const std::vector<Expr>& places, const std::vector<Expr>& values);

}  // namespace kiln::ir
