// Lowering pass unroll_loops: replaces unrolled loops of constant extent by copies of their
// body, and applies the automatic unrolling that loop annotations ask for.
#pragma once

#include "kiln/ir/function.h"

namespace kiln::tir {

// Unrolls loops in the IR:
//  1. A For of kind kUnrolled with a constant extent E becomes E copies of its body in a
//     SeqStmt, each with the loop variable replaced by min + k and fresh variables for what the
//     copy defines, when E is at most the step limit and the copies are small (E times the nodes
//     of the body at most 4096). The step limit is the value of the annotation
//     "pragma_auto_unroll_max_step" on the loop or the nearest enclosing loop that has it, else
//     64. A loop above the limits stays a kUnrolled loop for the code generator's unroller, as
//     does one of symbolic extent.
//  2. Under a loop annotated "pragma_auto_unroll_max_step" = N > 0 (the loop itself included),
//     a serial loop with a constant extent is unrolled too when every loop inside it is
//     unrolled (inner loops are decided first) and its extent times the number of steps its
//     body runs is at most N: a store or evaluation is a step, a vector store one step per 8
//     lanes (wide vectors unrolled make long straight-line code that LLVM takes long to build),
//     and each transcendental call (exp, tanh, ...; builtin_is_transcendental) 8 more steps per
//     such register of lanes (each expands into a polynomial of some twenty instructions), and
//     a gather (a vector load of non-consecutive lanes) one more step per lane (each lane is a
//     load of its own); and the copies store at most 64 times to buffers other than "local"
//     ones, a vector store counting once per 8 lanes (LLVM compares every pair of a loop
//     body's stores to memory).
//  3. "pragma_unroll_explicit" = 0 on a loop (or an enclosing one) keeps the loops chosen by 1
//     and 2 as loops of kind kUnrolled rather than copying them; 1 (the default) copies them.
//  4. "pragma_llvm_unroll" = 0 on a loop (or an enclosing one) gives every serial or parallel
//     loop under it that stays a loop the annotation kLlvmLoopFixedAnnotation: the code
//     generator tells LLVM neither to unroll it nor to vectorize it (a parallel loop: the loop
//     over a thread's chunk). The schedule decided both (the tuner puts the
//     pragma on every nest it schedules): LLVM's own unrolling of a tuned nest costs most of
//     its build time, and its loop vectorizer made masked copies of a guarded padding row that
//     the schedule left scalar, up to 1.35x slower. 1 (the default) leaves them to LLVM.
// The three annotations are removed from the loops that carry them. Extent 0 becomes a no-op.
//
//   for i in T.unroll(3):           =>    A[0] = B[0]
//     A[i] = B[i]                          A[1] = B[1]
//                                          A[2] = B[2]
//
// Returns `func` itself when nothing is unrolled. Tested by tests/cpp/tir/unroll_loops_test.cc
// and tests/python/test_lower_loop_passes.py.
ir::Ref<ir::PrimFunc> unroll_loops(const ir::Ref<ir::PrimFunc>& func);

// The loop annotation of rule 4, read by the LLVM code generator.
constexpr const char* kLlvmLoopFixedAnnotation = "kiln.llvm_loop_fixed";

}  // namespace kiln::tir
