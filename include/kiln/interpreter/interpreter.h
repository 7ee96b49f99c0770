// The reference interpreter of TensorIR: runs a PrimFunc directly on memory, with the semantics
// written at the top of kiln/ir/expr.h and no code generator. It is the numeric oracle that
// schedules, lowering passes and code generators are checked against (Python:
// kiln.tir.interpret(func, *arrays)).
//
// What it does, beyond evaluating every expression and statement node:
//
// * Arguments are checked before anything runs: their count, dtype, number of dimensions, shape
//   (a symbolic dimension is bound by the first parameter in which it appears alone, and every
//   other use must agree), layout (C-contiguous when the buffer has no strides, else the
//   buffer's strides; a stride or elem_offset that is a variable is bound from the argument) and
//   whether an argument the function stores into is writable. Outputs are written in place.
// * Every load and store is checked against the extent of the storage behind the buffer's data
//   variable; out of bounds is an error naming the buffer, the index and the extent. Buffers
//   that share a data variable share storage (with their own strides and elem_offset).
// * Storage allocated by Allocate or by a block's alloc_buffers is filled with garbage, quiet
//   NaN for floats and 0xCD bytes for integers and bools, so that a read of memory that was never
//   written shows up in results. It lives from the entry of its statement or block to the exit.
// * Blocks: the iterators are bound to their values where the predicate holds, each value must
//   lie in its iterator's domain (an error otherwise), `init` runs when every reduce iterator is
//   at the minimum of its domain, then the body.
// * Numbers: integers wrap to their width; Div/Mod truncate and FloorDiv/FloorMod floor;
//   integer division by zero and shifts by a negative amount or the width or more are errors
//   naming the expression. float32 results are computed in double and rounded after every
//   operation; float16/bfloat16 ones in float32 and rounded back to the storage type (round to
//   nearest even). Math builtins use <cmath> in double, rounded to the dtype (through float32 for
//   float16/bfloat16). A cast from float to integer truncates toward zero; NaN gives 0 and values
//   out of the target's range saturate to its least or greatest value. `round` is half-to-even.
// * Loops of every kind (parallel, vectorized, unrolled, GPU thread-bound) run one iteration
//   after another. Barriers between GPU threads are therefore not modelled: a function that calls
//   storage_sync is refused rather than run with wrong results.
// * Refused with a clear error when the function is compiled, before memory is touched:
//   call_extern, call_pure_extern, call_llvm_pure_intrin, address_of, storage_sync, the
//   packed-argument builtins, Reduce nodes (TE only), handle-typed variables and lets.
//
// Tests: tests/cpp/interpreter/interpreter_test.cc, tests/python/test_interpreter.py.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::interpreter {

// One argument of interpret(): a tensor viewed in place, or a scalar.
struct Argument {
  enum class Kind { kTensor, kInt, kFloat };
  Kind kind = Kind::kInt;

  // A tensor: the address of its element 0, its element dtype, its shape and its strides in
  // elements (empty: compact row-major). The function may store into it only when `writable`.
  void* data = nullptr;
  ir::DataType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  bool writable = true;

  // A scalar: an integer or bool (kInt), or a float (kFloat).
  int64_t int_value = 0;
  double float_value = 0.0;

  static Argument tensor(void* data, ir::DataType dtype, std::vector<int64_t> shape,
                         std::vector<int64_t> strides = {}, bool writable = true);
  static Argument integer(int64_t value);
  static Argument floating(double value);
};

// Runs `func` on `args`, one per parameter in order, writing its outputs in place. Errors are
// kiln::Error exceptions whose message starts with "tir.interpret:".
void interpret(const ir::PrimFunc& func, const std::vector<Argument>& args);

}  // namespace kiln::interpreter
