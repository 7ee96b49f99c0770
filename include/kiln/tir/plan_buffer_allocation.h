// Lowering pass plan_buffer_allocation: moves each buffer a block allocates down to the
// innermost place that still encloses every access to it.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Moves every buffer of a block's alloc_buffers to the lowest common ancestor (a block or a
// loop) of its accesses, so that compact_buffer_allocation can shrink it to what one iteration
// touches. A buffer placed at a loop is allocated by a new block without iterators
// (`with block(""):`) that wraps the loop's body.
//
// The buffer is never moved into a loop whose iterations could pass values through it: a loop
// bound to a reduce (or ordered, opaque) iterator of a block that stores into the buffer (it
// accumulates there over the loop), a loop with no block between it and an access, and, for
// "global" buffers, GPU thread loops. A "shared" or "local" buffer may always move into a
// blockIdx loop (each thread block has its own). A "shared" buffer may move into threadIdx loops:
// it stays one buffer per thread block (compact_buffer_allocation sizes it for all the block's
// threads), and there it can shrink to what one iteration of a serial loop inside them touches (a
// GEMM's tile of one step of k, not the whole k extent). Blocks are trusted for the rest, as
// TensorIR requires and the schedule primitives ensure: spatial instances are independent, and a
// block reads what blocks before it in the same iteration produced. A buffer that is never accessed
// stays where it is. Returns `func` itself when nothing moves.
//
//   with block("root"):                      with block("root"):
//     T = alloc_buffer((64,))                  for i0 in range(4):
//     for i0 in range(4):              =>        with block(""):
//       for i1 in range(16):                       T = alloc_buffer((64,))
//         with block("T"): ... T[v] = ...          for i1 in range(16): ...
//       for i1 in range(16):                       for i1 in range(16): ...
//         with block("B"): ... = T[v]
//
// Tested by tests/cpp/tir/plan_buffer_allocation_test.cc and tests/python/test_lower_passes.py.
ir::Ref<ir::PrimFunc> plan_buffer_allocation(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
