// Lowering pass make_packed_api: makes a lowered PrimFunc the packed entry point that the code
// generator compiles and the runtime calls (kiln/runtime/c_runtime_api.h).
#pragma once

#include <string>

#include "kiln/ir/function.h"

namespace kiln::tir {

// Wraps the body of `func` in LetStmts that read the packed arguments, in parameter order:
//  * a tensor parameter i binds its buffer's data variable to packed_arg_data(i), and each
//    symbolic dimension k of its shape, at the first occurrence of the variable, to
//    cast(dtype, packed_arg_shape(i, k)); later occurrences are not read;
//  * a scalar parameter i binds its variable to cast(dtype, packed_arg_int(i)) (integers and
//    bool) or cast(dtype, packed_arg_float(i)) (floats). A scalar parameter that is also a
//    dimension of a tensor parameter takes the value of the dimension.
// and sets the attributes "global_symbol" (kept, else "kiln_unchecked_" + `name`: the kernel
// checks nothing), "kiln.packed" = true, "kiln.noalias" = true (other attributes such as
// "tir.noalias" are kept) and "kiln.arg_spec": the JSON text of this function's entry in the
// module manifest, e.g.
//
//   {"name": "main", "symbol": "kiln_unchecked_main", "sym_vars": ["n"],
//    "sym_var_dtypes": ["int32"],
//    "args": [{"name": "A", "kind": "tensor", "dtype": "float32", "ndim": 2, "shape": [128, "n"],
//              "strides": null, "device": "cpu", "alignment": 64, "written": false},
//             {"name": "alpha", "kind": "scalar", "dtype": "float32"}]}
//
// "sym_var_dtypes" holds each symbolic variable's dtype, in which the kernel computes with it.
// "sym_var_max" (present only when some int32 variable has a limit) holds, per variable, the
// largest value the function's int32 index arithmetic supports (tir/index_limits.h), or null.
// "written" says whether the function may store into the tensor: a BufferStore to its data
// variable anywhere in the body (or through a handle variable bound to it), or its address or
// handle passed to a call with side effects. A tensor that is read and written is written.
//
// Design: the entry point checks nothing. The runtime checks every argument against this spec
// (count, type codes, dtype, ndim, shape and the consistency of symbolic dimensions and their
// range in their dtype, strides, device, alignment) before the kernel runs, so the kernel adds
// no AssertStmt and trusts them. kiln.noalias holds because the runtime passes no written tensor
// that overlaps another argument: it copies overlapping read-only tensors and refuses
// overlapping written ones (kiln/runtime/c_runtime_api.h, "Overlapping arguments").
//
// Errors (kValue, naming the function and the parameter): a dimension that is an expression
// other than a constant or a variable (the spec cannot state it), a stride variable that is not
// also a dimension, a nonzero element offset, a handle scalar, and a variable the body uses that
// is neither a parameter nor a dimension of a tensor parameter.
//
//   def main(A: Buffer((n,)), alpha: float32):     def main(...):  # kiln.packed, kiln.arg_spec
//     body                                    =>     A_data = packed_arg_data(0)
//                                                    n = T.int32(packed_arg_shape(0, 0))
//                                                    alpha = T.float32(packed_arg_float(1))
//                                                    body
//
// Returns `func` itself when it already is a packed entry point ("kiln.packed" is set). Tested by
// tests/cpp/tir/make_packed_api_test.cc and tests/python/test_lower_packed_entry.py.
// `device` is the device of the tensor arguments in the spec: "cpu", or "cuda" / "opencl" for the
// host side of a GPU function (split_host_device). A CUDA tensor's alignment in the spec is at
// least kCudaTensorAlignment (kiln/ir/buffer.h); an OpenCL tensor's is 1 (its data is a cl_mem).
ir::Ref<ir::PrimFunc> make_packed_api(const ir::Ref<ir::PrimFunc>& func, const std::string& name,
                                      const std::string& device = "cpu");

}  // namespace kiln::tir
