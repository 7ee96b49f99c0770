// Lowering of a tensor-expression graph to a TensorIR PrimFunc (te.create_prim_func).
//
// For A, B placeholders and C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k)),
// create_prim_func({A, B, C}) gives
//
//   def main(A: Buffer((M, K)), B: Buffer((K, N)), C: Buffer((M, N))):
//     with block("root"):
//       for i, j, k in grid(M, N, K):
//         with block("C"):
//           v_i, v_j, v_k = axis.remap("SSR", [i, j, k])
//           reads(A[v_i, v_k], B[v_k, v_j])
//           writes(C[v_i, v_j])
//           with init():
//             C[v_i, v_j] = 0.0
//           C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
//
// Tested by tests/cpp/te/create_prim_func_test.cc and tests/python/test_te*.py.
#pragma once

#include <variant>
#include <vector>

#include "kiln/te/tensor.h"

namespace kiln::te {

// An argument of create_prim_func: a tensor (a buffer parameter) or a scalar variable.
using PrimFuncArg = std::variant<Tensor, Ref<Var>>;

// The PrimFunc computing every compute op reachable from `args`.
//
// 1. Parameters follow `args`: a handle Var mapped to the tensor's own buffer, or the scalar Var.
//    Symbolic dimensions are not parameters; they are bound from the buffers' shapes.
// 2. The body is a root block "root" holding, for each compute op in topological order, one
//    serial loop per axis and then per reduce axis around a block named after the op (made unique
//    with _1, _2, … when names repeat). Its iterators are fresh variables (spatial, then reduce)
//    bound to the loop variables.
// 3. reads: every tensor the body loads, one region per buffer covering all its accesses
//    (per dimension [min, max + 1) of the indices); writes: the op's outputs at the spatial point.
//    A reduction's own read of its output is not listed, as in TVM.
// 4. A reduction block has an `init` storing the identity (or the Reduce's init values) and the
//    update out = combiner(out, source). A `where` condition guards the update with an
//    IfThenElse statement (lazy, so the source is never evaluated where the condition is false).
//    Tuple reducers bind every combined value with a LetStmt before storing any of them.
// 5. Compute ops not in `args` become alloc_buffers of the root block. A placeholder not in
//    `args`, or a free variable that is neither in `args` nor a dimension of a parameter's shape,
//    is an error naming it.
Ref<ir::PrimFunc> create_prim_func(const std::vector<PrimFuncArg>& args);

}  // namespace kiln::te
