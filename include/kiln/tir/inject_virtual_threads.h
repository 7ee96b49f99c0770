// Lowering pass inject_virtual_threads: loops bound to vthread.x/y/z become loops that one GPU
// thread runs, interleaved with the statements its virtual threads share.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// A loop bound to "vthread.x|y|z" (a virtual thread) is a spatial loop whose iterations the
// schedule treats as threads of their own: they compute disjoint outputs and share what the
// thread block shares. Since the scheduled program treats a vthread loop like a threadIdx loop
// around a "shared" buffer (compute_at and compact_buffer_allocation size such a buffer for
// every virtual thread), a shared-memory fetch under a vthread loop does not depend on it and
// is made once for all of them. This pass runs the virtual threads inside their thread:
//  1. A statement under the vthread loop `v` (extent V, a constant) is variant when it depends
//     on v: it uses v, a let variable or loop bound computed from v, or a variant buffer, or it
//     stores into one. A buffer allocated under the loop is variant when a statement that
//     depends on v stores into it (a thread's accumulator tile, say).
//  2. A statement that is not variant runs once, where it is. A variant statement that
//     contains no store of a statement that is not variant (no shared fetch) is wrapped in
//     `for v' in T.unroll(V)` (v' replacing v). Any other variant statement is entered: the
//     parts of a sequence, the body of a loop, of an `if` and of a let whose bounds, condition
//     or value do not depend on v (else the statement is wrapped whole, as a serial loop of
//     the virtual threads would run it: correct, with the shared fetch made V times).
//  3. A variant buffer whose allocation is entered gets V copies: its extent times V, and each
//     access `B[i]` under a wrapping loop reads `B[v' * n + i]` (n the buffer's elements), so
//     that each virtual thread keeps its own across the statements that run once between.
// Moving the virtual threads' loop inside a loop they share reorders their iterations, which
// the schedule allows: they write disjoint outputs and read only what the shared statements
// wrote before them. Every thread runs every virtual thread, so a barrier that insert_barriers
// later puts between the shared fetch and its readers is reached by all the block's threads the
// same number of times. Runs on flattened buffers (one index each); a vthread loop of symbolic
// extent is an error (kValue) naming the loop. Returns `func` itself when it binds no vthread.
//
//   for v in T.thread_binding(2, "vthread.x"):      for tx in T.thread_binding(4, "threadIdx.x"):
//     for tx in T.thread_binding(4, "threadIdx.x"):   acc = T.allocate([2], "float32", "local")
//       acc = T.allocate([1], "float32", "local")     for v in T.unroll(2):
//       acc[0] = 0                                      acc[v] = 0
//       for k0 in range(4):                    =>     for k0 in range(4):
//         S[tx] = A[k0 * 4 + tx]                        S[tx] = A[k0 * 4 + tx]
//         acc[0] = acc[0] + S[v * 2]                    for v in T.unroll(2):
//       C[v * 4 + tx] = acc[0]                            acc[v] = acc[v] + S[v * 2]
//                                                     for v in T.unroll(2):
//                                                       C[v * 4 + tx] = acc[v]
//
// Tested by tests/cpp/tir/inject_virtual_threads_test.cc and
// tests/python/test_lower_virtual_threads.py.
ir::Ref<ir::PrimFunc> inject_virtual_threads(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
