// Lowering pass promote_to_registers: a loop that reaches a thread's "local" buffer only at
// constant offsets works on a copy of those elements that LLVM keeps in registers.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// For each Allocate of scope "local" with a constant size, the outermost serial or unrolled loops
// under it that access the buffer only at constant indices (a scalar index, or a Ramp of stride
// 1 from a constant) and store to it, where no two of those accesses overlap unless they are
// the same (an offset and a lane count), and that use its data variable nowhere else: the loop
// moves into an allocation of a second buffer of the same size, loads and stores it instead,
// with the elements it loads copied in before it and those it stores copied out after it. A
// vector that reaches past the buffer's end (the masked last vector of a row no vector divides)
// makes the second buffer that much longer and is copied only up to the end; an access before
// the buffer's start keeps the loop on the buffer.
//
// A register tile (cache_write "local") whose write-back indexes it by a loop variable (an
// output whose layout is not the tile's, a loop of rows the schedule did not unroll) stays in
// memory for LLVM's SROA; its reduction loop then loads and stores each accumulator on every
// step until LICM promotes them one by one (the largest part of the optimization time of a
// tuned convolution). The copy is split into SSA values at once. Loops with a parallel loop
// inside are left alone.
//
//   local C[32]                               local C[32]
//   for k in range(K):                  =>    local C_reg[32]
//     C[0:16] += A[k] * B[k, 0:16]            C_reg[0:16] = C[0:16]; C_reg[16:32] = C[16:32]
//     C[16:32] += A[k] * B[k, 16:32]          for k in range(K): C_reg[0:16] += ... (C_reg)
//   for j in range(32): D[j] = C[j]           C[0:16] = C_reg[0:16]; C[16:32] = C_reg[16:32]
//                                             for j in range(32): D[j] = C[j]
//
// Returns `func` itself when nothing is promoted. Runs after vectorize_loops and unroll_loops
// (the constant indices are those of the copies that unrolling made). Tested by
// tests/cpp/tir/promote_to_registers_test.cc.
ir::Ref<ir::PrimFunc> promote_to_registers(const ir::Ref<ir::PrimFunc>& func);

}  // namespace kiln::tir
