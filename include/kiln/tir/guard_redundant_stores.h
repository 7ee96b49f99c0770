// Lowering pass guard_redundant_stores: in a GPU kernel, a store that does not depend on some
// thread index is made by one thread of that axis instead of all of them.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Every thread of a GPU block runs the kernel's code outside the loops bound to its own axes,
// and a store whose element does not depend on a thread index is made by every thread of that
// axis: redundant work at best, and a race for a reduction (one thread's init interleaved with
// another's updates). In each kernel (the outermost loop nests bound to blockIdx/threadIdx),
// every maximal statement that stores to "shared" or "global" memory and contains no barrier
// and no loop bound to threadIdx is wrapped in loops `for t in T.thread_binding(1, tag)`, one
// per threadIdx axis of the kernel that its stored indices do not depend on (the code
// generators emit them as guards `if threadIdx.<axis> < 1`). "local" stores are each thread's
// own and stay. Runs before insert_barriers, which then synchronizes the other threads with
// the guarded statement's result, and places no barrier inside it.
//
//   for bx in T.thread_binding(4, "blockIdx.x"):        for bx in T.thread_binding(...):
//     for k in range(8):                                  for t in T.thread_binding(1,
//     "threadIdx.x"):
//       S[0] = S[0] + A[bx * 8 + k]            =>           for k in range(8):
//     for tx in T.thread_binding(8, "threadIdx.x"):             S[0] = S[0] + A[bx * 8 + k]
//       B[bx * 8 + tx] = A[bx * 8 + tx] / S[0]          for tx in T.thread_binding(8, ...): ...
//
// In the scheduled program these stores repeat the same value (a block's instance depends only
// on its iterator values), so running them once changes no result. Functions without thread
// loops are returned unchanged. Tested by tests/cpp/tir/gpu_lowering_test.cc and
// tests/python/test_gpu_fuzz.py.
ir::Ref<ir::PrimFunc> guard_redundant_stores(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
