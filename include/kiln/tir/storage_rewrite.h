// Lowering pass storage_rewrite: fewer and longer-lived allocations for intermediate buffers.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Runs on the flat program (after flatten_buffers) in two steps:
//  1. Reuse. Among the Allocates that directly wrap a SeqStmt, a buffer whose uses all come
//     after the last use of another one (of the same dtype and scope, constant size, at least as
//     large) takes over that buffer's storage: its accesses use the earlier buffer's data
//     variable and its own Allocate disappears. Uses are compared by position in the sequence,
//     so buffers used in the same statement of the sequence never share.
//  2. Hoisting. An Allocate at the top of the body of a serial or unrolled loop whose size does
//     not depend on the loop variable moves in front of the loop, so that it is allocated once
//     instead of per iteration.
//     Parallel, vectorized and GPU thread loops keep their allocations (each iteration needs its
//     own storage). Reuse comes first because it is decided where each iteration allocates
//     afresh, so no value can have been meant to pass from one iteration to the next.
// Neither step changes what a program that reads only memory it has written computes; only the
// contents of memory that was never written differ. Returns `func` itself when nothing changes.
//
//   for i in range(4):                        with T.allocate((8,)) as A1:
//     with T.allocate((8,)) as A1:              with T.allocate((8,)) as A2:
//       with T.allocate((8,)) as A2:     =>       for i in range(4):
//         with T.allocate((8,)) as A3:               A1[...] = ...
//           A1[...] = ...                            A2[...] = A1[...]
//           A2[...] = A1[...]                        A3[...] = A2[...]   (A3 in A1's storage)
//           A3[...] = A2[...]                        ... = A3[...]
//           ... = A3[...]
//
// Tested by tests/cpp/tir/storage_rewrite_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> storage_rewrite(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
