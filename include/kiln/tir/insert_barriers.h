// Lowering pass insert_barriers: synchronizes the threads of a GPU block where one thread may
// read shared memory that another wrote, or overwrite shared memory another still reads.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Inside each loop nest bound to GPU blocks and threads (the kernels of split_host_device),
// inserts storage_sync("shared") calls:
//  1. In a sequence, before a statement that reads a "shared" buffer written by an earlier
//     statement of the sequence since the last barrier, or writes one read since then.
//  2. At the end of the body of a serial loop whose body both writes and reads one "shared"
//     buffer, so that an iteration's writes wait for the previous iteration's reads.
// Nothing is inserted inside a loop annotated "kiln.single_thread" (a statement that
// guard_redundant_stores gave to one thread). Scheduled TensorIR has no barriers: a thread-bound
// loop that fills a shared tile and the next one that reads it behave, before lowering and in the
// interpreter, as if they ran one after the other; the barriers give them that meaning on a GPU.
// Functions without bound loops are returned unchanged.
//
//   for tx in T.thread_binding(64, "threadIdx.x"):     for tx in T.thread_binding(64, ...):
//     for k in range(8):                                   for k in range(8):
//       As[tx] = A[k * 64 + tx]                  =>          As[tx] = A[k * 64 + tx]
//       C[tx] = C[tx] + As[63 - tx]                           storage_sync("shared")
//                                                             C[tx] = C[tx] + As[63 - tx]
//                                                             storage_sync("shared")
//
// Tested by tests/cpp/tir/gpu_lowering_test.cc and tests/python/test_gpu_build.py.
ir::Ref<ir::PrimFunc> insert_barriers(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
