// Lowering pass lower_cross_thread_reduction: a reduction whose reduce loop is bound to GPU
// threads becomes per-thread partial results combined through shared memory or warp shuffles.
#pragma once

#include <cstdint>

#include "kiln/ir/function.h"

namespace kiln::tir {

// Runs on scheduled TensorIR (with blocks), before lower_init_block, for GPU targets. For a loop
// bound to threadIdx.x/y/z (extent T) over which a reduction block reduces, the loop nest is
// replaced by an opaque block (`<block>_cross_thread`) that
//  1. accumulates each thread's part in a local register, starting from the block's init value
//     (the block's predicate guards each step),
//  2. stores the partial results in a shared buffer of T elements per thread group (one group per
//     value of the enclosing threadIdx loops of other axes),
//  3. combines them in ceil(log2 T) halving steps (thread t adds the value of thread t + s), and
//  4. lets thread 0 store the result where the block stored it;
// insert_barriers then separates the steps. Reading one element of the output per thread group,
// this is the same reduction in another order (floating-point sums may differ in rounding).
//
//   for bx in thread_binding(128, "blockIdx.x"):        for bx in thread_binding(...):
//     for tx in thread_binding(32, "threadIdx.x"):        block B_cross_thread (red: shared[32]):
//       for k in range(4):                                  for tx in thread_binding(32, ...):
//         block B: vi = bx; vk = tx * 4 + k   =>             acc = 0; for k: acc += A[bx, tx*4+k]
//           init: B[vi] = 0                                  red[tx] = acc
//           B[vi] = B[vi] + A[vi, vk]                      for t in thread_binding(32, ...):
//                                                            if t < 16: red[t] += red[t + 16]
//                                                          ... (steps 8, 4, 2, 1)
//                                                          for t in thread_binding(32, ...):
//                                                            if t == 0: B[bx] = red[0]
//
// A reduction of several values (argmax's index and value, ir::match_block_reducer) has a
// register and a shared buffer per value ("<block>_acc0", "<block>_red0", ...), and each step
// combines all of them at once with the block's combiner: thread t's (index, value) pair with
// thread t + s's, each new value bound to a LetStmt before any is stored.
//
// Preconditions (a kValue error naming the block otherwise): the thread-bound loop contains only
// the block and the loops between them, none of them bound to threads; the block is a
// reduction that ir::match_block_reducer recognizes (`C[idx] = f(C[idx], x)` with f one of
// + * max min and its identity as init, or several values updated together), without buffers
// of its own; every reduce iterator is bound through loops at or inside the thread loop, and no
// spatial one is. Functions without such loops are returned unchanged. Tested by
// tests/python/test_gpu_build.py and tests/python/test_topi_gpu_full_reduction.py.
// With `warp_size` > 0 (CUDA), a reduction over threadIdx.x of a power-of-two extent up to the
// warp size, where every loop bound to threadIdx.x has that extent (so that each warp holds
// whole groups of threads), combines the parts with warp shuffles instead: each thread combines
// its values with those of the thread s lanes above (warp_shuffle_down, every value shuffled by
// every lane before the combiner runs) for s = T/2, ..., 1, in registers, with no shared memory
// and no barrier; thread 0 stores the result.
ir::Ref<ir::PrimFunc> lower_cross_thread_reduction(const ir::Ref<ir::PrimFunc>& func,
                                                   int64_t warp_size = 0);

}  // namespace kiln::tir
