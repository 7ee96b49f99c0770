// Lowering pass storage_rewrite: fewer and longer-lived allocations for intermediate buffers.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Runs on the flat program (after flatten_buffers) in two steps:
//  1. Hoisting. An Allocate of constant size at the top of the body of a serial or unrolled
//     loop moves in front of the loop, so that it is allocated once instead of per iteration.
//     Parallel, vectorized and GPU thread loops keep their allocations (each iteration needs its
//     own storage).
//  2. Reuse. Among the Allocates that directly wrap a SeqStmt, a buffer whose uses all come
//     after the last use of another one (of the same dtype and scope, constant size, at least as
//     large) takes over that buffer's storage: its accesses use the earlier buffer's data
//     variable and its own Allocate disappears. Uses are compared by position in the sequence,
//     so buffers used in the same statement of the sequence never share.
// Neither step changes what a program that reads only memory it has written computes; only the
// contents of memory that was never written differ. Returns `func` itself when nothing changes.
//
//   allocate T1[64]:                          allocate T1[64]:
//     allocate T2[64]:                          for i in range(64): T1[i] = A[i]
//       allocate T3[64]:                        for i in range(64): T2[i] = T1[i] * 2   (T2: own)
//         for i in range(64): T1[i] = A[i]       for i in range(64): T1'[i] = T2[i] + 1
//         for i ...: T2[i] = T1[i] * 2     =>    for i in range(64): B[i] = T1'[i]
//         for i ...: T3[i] = T2[i] + 1         (T1' is T3 on the storage of T1)
//         for i ...: B[i] = T3[i]
//
// Tested by tests/cpp/tir/storage_rewrite_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> storage_rewrite(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
