// Lowering pass lower_opaque_block: removes blocks, leaving plain loops, conditions and
// allocations.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Replaces every BlockRealize/Block pair by its body: block iterators are substituted by the
// values they are bound to, a predicate that is not the constant true becomes an IfThenElse,
// each of alloc_buffers becomes an Allocate around the body (inside the predicate), and the read
// and write regions and block annotations are dropped. Loops keep their kind, thread binding and
// annotations. Blocks must have no init any more (run lower_init_block first): a block with an
// init is a kValue error. Returns `func` itself when it has no blocks.
//
//   for i in range(16):                      for i in range(16):
//     with block("B"):                  =>     if i * 2 < 30:
//       vi = axis.spatial(32, i * 2)              B[i * 2] = A[i * 2]
//       where(i * 2 < 30)
//       B[vi] = A[vi]
//
// Tested by tests/cpp/tir/lower_opaque_block_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> lower_opaque_block(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
