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
//   after another: the meaning of scheduled TensorIR, where a thread-bound loop that fills a
//   shared tile and the next one that reads it behave as if run one after the other (lowering
//   inserts the barriers that give them this meaning on a GPU).
// * GPU semantics, for a function that contains storage_sync (after insert_barriers), when
//   Options::gpu asks for it, and always for the kernels of device_launch calls (the host
//   function that split_host_device leaves): each outermost loop bound to blockIdx/threadIdx
//   runs as a grid of thread blocks. The launch extent of a tag is the largest extent of the
//   nest's loops bound to it (a device_launch passes its own). Blocks run one after another; in
//   a block every thread runs the nest, a loop bound to a tag being the thread's index along it
//   (nested loops with the same tag are the same index), under the guard `index < extent` when
//   the loop is shorter than the launch. Threads advance in lock step from barrier to barrier:
//   thread 0 runs up to its next storage_sync, then thread 1, …, then all go on. Allocations of
//   scope "shared" exist once per block, shared by its threads; any other allocation inside the
//   nest belongs to one thread. A "shared" buffer allocated outside the nest (scheduled TensorIR
//   allocates it in the root block) is one memory for the whole run, checked all the same.
//   Errors (kRuntime) name the threads and blocks as (x, y, z):
//     - a missing barrier: a thread reads or writes an element of a "shared" buffer that another
//       thread wrote since the block's last barrier, or writes one another thread read since;
//     - a divergent barrier: a storage_sync that some threads of a block reach and others do not
//       (they finish, or wait at another one).
//   Accesses to global memory (the arguments) are not checked for races between threads.
// * Refused with a clear error when the function is compiled, before memory is touched:
//   call_extern, call_pure_extern, call_llvm_pure_intrin, address_of, storage_sync without GPU
//   semantics or inside a block, the packed-argument builtins, Reduce nodes (TE only),
//   handle-typed variables and lets.
//
// Tests: tests/cpp/interpreter/interpreter_test.cc, tests/python/test_interpreter.py,
// tests/python/test_interpreter_gpu.py.
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

// How loops bound to GPU blocks and threads run: kAuto gives GPU semantics to a function that
// contains storage_sync and runs any other one serially.
enum class GpuSemantics { kAuto, kOn, kOff };

struct Options {
  GpuSemantics gpu = GpuSemantics::kAuto;
  // The device kernels that the function's device_launch calls name by their "global_symbol"
  // (the kernels of split_host_device, e.g. the other functions of the module that
  // tir.lower(func, target="cuda") returns). They run with GPU semantics.
  std::vector<ir::Ref<ir::PrimFunc>> kernels;
};

// Runs `func` on `args`, one per parameter in order, writing its outputs in place. Errors are
// kiln::Error exceptions whose message starts with "tir.interpret:".
void interpret(const ir::PrimFunc& func, const std::vector<Argument>& args,
               const Options& options = {});

}  // namespace kiln::interpreter
