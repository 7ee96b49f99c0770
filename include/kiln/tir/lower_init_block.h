// Lowering pass lower_init_block: a reduction block's `init` becomes an ordinary guarded
// statement at the front of the block's body.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Replaces the init of every block by `if (each reduce iterator == the min of its domain)
// { init }` in front of the body. The guard is on block iterators, so it stays right when a
// later step changes the loops that bind them. A block without reduce iterators runs its init
// unconditionally before the body. Returns `func` itself when no block has an init.
//
//   with block("C"):                          with block("C"):
//     vi, vk = axis.remap("SR", [i, k])          vi, vk = axis.remap("SR", [i, k])
//     with init():                        =>     if vk == 0:
//       C[vi] = 0.0                                C[vi] = 0.0
//     C[vi] = C[vi] + A[vi, vk]                  C[vi] = C[vi] + A[vi, vk]
//
// Tested by tests/cpp/tir/lower_init_block_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> lower_init_block(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
