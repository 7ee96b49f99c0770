// The builtins a Call node can name: math intrinsics and operations of the IR itself.
// One list; each entry gives the name printed and parsed, the number of arguments (-1: any),
// and whether the call is pure (no side effect, may be moved or removed when unused).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::ir {

// X(Name, "printed name", arity, pure)
#define KILN_BUILTIN_LIST(X)                                                                      \
  /* Float math, element-wise on float types (float16/bfloat16 computed in float32). */           \
  X(Exp, "exp", 1, true)                                                                          \
  X(Exp2, "exp2", 1, true)                                                                        \
  X(Log, "log", 1, true)                                                                          \
  X(Log2, "log2", 1, true)                                                                        \
  X(Log1p, "log1p", 1, true)                                                                      \
  X(Sqrt, "sqrt", 1, true)                                                                        \
  X(Rsqrt, "rsqrt", 1, true)                                                                      \
  X(Sin, "sin", 1, true)                                                                          \
  X(Cos, "cos", 1, true)                                                                          \
  X(Tan, "tan", 1, true)                                                                          \
  X(Tanh, "tanh", 1, true)                                                                        \
  X(Sigmoid, "sigmoid", 1, true)                                                                  \
  X(Erf, "erf", 1, true)                                                                          \
  X(Floor, "floor", 1, true)                                                                      \
  X(Ceil, "ceil", 1, true)                                                                        \
  X(Round, "round", 1, true) /* half to even, as numpy.round */                                   \
  X(Trunc, "trunc", 1, true)                                                                      \
  X(Pow, "pow", 2, true)                                                                          \
  X(IsNan, "isnan", 1, true)                                                                      \
  /* Any numeric type. */                                                                         \
  X(Abs, "abs", 1, true)                                                                          \
  /* Integers: bit operations; shifts by a negative or too large amount are undefined. */         \
  X(ShiftLeft, "shift_left", 2, true)                                                             \
  X(ShiftRight, "shift_right", 2, true)                                                           \
  X(BitwiseAnd, "bitwise_and", 2, true)                                                           \
  X(BitwiseOr, "bitwise_or", 2, true)                                                             \
  X(BitwiseXor, "bitwise_xor", 2, true)                                                           \
  X(BitwiseNot, "bitwise_not", 1, true)                                                           \
  X(Popcount, "popcount", 1, true)                                                                \
  /* if_then_else(cond, a, b): evaluates only the arm it picks (guards padded loads); with a      \
     vector cond, both arms on every lane, but an arm that is a load loads only on the lanes      \
     that pick it (a masked load). */                                                             \
  X(IfThenElse, "if_then_else", 3, true)                                                          \
  /* likely(cond): cond, with a hint that it is usually true (loop partition uses it). */         \
  X(Likely, "likely", 1, true)                                                                    \
  /* reinterpret(x): the bits of x as the call's dtype (same total width). */                     \
  X(Reinterpret, "reinterpret", 1, true)                                                          \
  /* address_of(load): the address of a BufferLoad's element, as a handle. */                     \
  X(AddressOf, "address_of", 1, true)                                                             \
  /* call_pure_extern("name", args…) and call_extern: a C function by name. */                  \
  X(CallPureExtern, "call_pure_extern", -1, true)                                                 \
  X(CallExtern, "call_extern", -1, false)                                                         \
  /* call_llvm_intrin("llvm.x86.…", args…): an LLVM intrinsic by name (tensor intrinsics). */ \
  X(CallLLVMPureIntrin, "call_llvm_pure_intrin", -1, true)                                        \
  /* Barrier of the threads of a GPU block over the given storage scope ("shared"). */            \
  X(StorageSync, "storage_sync", 1, false)                                                        \
  /* device_launch("kernel", device_id, grid x, y, z, block x, y, z, shared bytes, args…): */   \
  /* the host side of a GPU function launches a device kernel of the module (split_host_device).  \
   */                                                                                             \
  X(DeviceLaunch, "device_launch", -1, false)                                                     \
  /* device_alloc(device_id, bytes) / device_free(device_id, ptr): device memory for a buffer */  \
  /* that passes between the kernels of a GPU function (its host side allocates it). */           \
  X(DeviceAlloc, "device_alloc", 2, false)                                                        \
  X(DeviceFree, "device_free", 2, false)                                                          \
  /* warp_shuffle_down(value, offset, width): the value of the lane `offset` above this one */    \
  /* within its segment of `width` lanes of the warp (CUDA's __shfl_down_sync). */                \
  X(WarpShuffleDown, "warp_shuffle_down", 3, false)                                               \
  /* ptx_mma("m16n8k16.row.col.f32.f16.f16.f32", a0, a1, a2, a3, b0, b1, c): one warp-wide */     \
  /* matrix multiply-accumulate (PTX mma.sync.aligned) on this lane's fragments: a_i and b_i */   \
  /* are float16x2 (one .b32 register of two halves), c and the result float32x4. The result */   \
  /* depends on every lane's fragments: only CUDA code has it (schedule/intrin/cuda_mma.cc). */   \
  X(PtxMma, "ptx_mma", -1, false)                                                                 \
  /* ptx_ldmatrix(trans, S[i, j:j+8]): the float16x8 this lane receives from one warp-wide */     \
  /* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 (trans 0 or 1), for which the lane gives */ \
  /* the address of row (lane % 8) of 8x8 matrix lane / 8: the 8 halves it loads from shared */   \
  /* memory, 16-byte aligned. Its two halves of each matrix m (elements 2m, 2m + 1) are row */    \
  /* lane / 4, columns 2 (lane % 4) + {0, 1} of the matrix (of its transpose with trans). */      \
  /* Only CUDA code has it (schedule/intrin/cuda_mma.cc). */                                      \
  X(PtxLdmatrix, "ptx_ldmatrix", 2, false)                                                        \
  /* ptx_cp_async(G[i]): the value of a load from global memory, as the value of a store */       \
  /* into a "shared" buffer that copies it asynchronously (CUDA's cp.async of 4, 8 or 16 */       \
  /* bytes, sm_80; a plain copy where there is none): the store is complete once a later */       \
  /* ptx_cp_async_wait_group lets its group go. As a value, the load's. */                        \
  X(PtxCpAsync, "ptx_cp_async", 1, true)                                                          \
  /* ptx_cp_async_commit_group(): the thread's asynchronous copies since the last commit */       \
  /* form a group; ptx_cp_async_wait_group(n): waits until at most n of them are in flight. */    \
  X(PtxCpAsyncCommitGroup, "ptx_cp_async_commit_group", 0, false)                                 \
  X(PtxCpAsyncWaitGroup, "ptx_cp_async_wait_group", 1, false)                                     \
  /* Access to the packed arguments of a compiled function (see make_packed_api): the data */     \
  /* pointer of DLTensor argument i (byte_offset applied), extent k of its shape (int64), */      \
  /* and scalar argument i as int64 / float64. Only the packed entry point uses them. */          \
  X(PackedArgData, "packed_arg_data", 1, true)                                                    \
  X(PackedArgShape, "packed_arg_shape", 2, true)                                                  \
  X(PackedArgInt, "packed_arg_int", 1, true)                                                      \
  X(PackedArgFloat, "packed_arg_float", 1, true)                                                  \
  /* The device_id of DLTensor argument i (int32): the GPU a launch goes to. */                   \
  X(PackedArgDeviceId, "packed_arg_device_id", 1, true)

enum class Builtin : uint8_t {
#define KILN_DECLARE_BUILTIN(Name, text, arity, pure) Name,
  KILN_BUILTIN_LIST(KILN_DECLARE_BUILTIN)
#undef KILN_DECLARE_BUILTIN
};

const char* builtin_name(Builtin op);
// -1 when the builtin takes any number of arguments.
int builtin_arity(Builtin op);
bool builtin_is_pure(Builtin op);
// Whether the builtin is a float math function that code generators expand into a long
// instruction sequence (exp, log, sin, tanh, erf, pow, ...): what makes a stage expensive to
// recompute and a loop body expensive to unroll. sqrt, fabs, floor and the like are not.
bool builtin_is_transcendental(Builtin op);
// The builtin printed as `name`, if there is one.
std::optional<Builtin> builtin_from_name(const std::string& name);

}  // namespace kiln::ir
