// Lowering pass lower_warp_memory: gives each "warp" buffer (the registers of a warp, which the
// tensor-core intrinsics of schedule/intrin/cuda_mma.cc use for their fragments) its memory.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// The lane of a "warp" buffer: its second-to-last dimension, of extent 32 (shape [..., 32, n]:
// n elements per lane). Each buffer that a block allocates in the "warp" scope becomes
//  * the registers of each thread ("local", without the lane dimension) when every access
//    indexes the lane with the lane itself: the variable of a loop bound to threadIdx.x over
//    [0, 32) around the access. Each thread then holds its own lane's n elements:
//      W = T.alloc_buffer((2, 32, 8), "float16", scope="warp")
//      for lane in T.thread_binding(32, thread="threadIdx.x"):
//        W[t, lane, e] = S[...]
//    ==>
//      W = T.alloc_buffer((2, 8), "float16", scope="local")
//      for lane in T.thread_binding(32, thread="threadIdx.x"):
//        W[t, e] = S[...]
//  * shared memory ("shared", the same shape) otherwise: where a lane reads another lane's
//    elements (a reference implementation in plain code does), all lanes' elements must be in
//    memory every thread of the block reaches; insert_barriers then orders the accesses. Where
//    every access is under a loop bound to threadIdx.y (the block's warps; no threadIdx.z) and
//    no index is that loop's variable, the buffer gets a leading dimension of the warps and
//    each access the loop's variable there: warps that load the same fragment (the warps along
//    one row of a GEMM's tile) each keep their copy, rather than overwriting each other's.
// Registers need the lanes of a warp to be threadIdx.x: in a kernel (an outermost loop nest
// bound to GPU axes) that accesses such a buffer, every loop bound to threadIdx.x must have a
// constant extent that is a multiple of 32, so that the launch's threadIdx.x extent is one and
// each warp is 32 consecutive values of threadIdx.x at one threadIdx.y and z.
//
// Runs on blocks, before plan_buffer_allocation, which then places and sizes the buffers as any
// "local" or "shared" one. A kValue error names the buffer for a "warp" buffer that is a
// parameter, whose second-to-last dimension is not 32, or that is accessed in registers in a
// kernel whose threadIdx.x extent breaks the rule above. Returns `func` itself when it has no
// "warp" buffer. Tested by tests/cpp/tir/lower_warp_memory_test.cc and
// tests/python/test_gpu_mma.py.
ir::Ref<ir::PrimFunc> lower_warp_memory(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
