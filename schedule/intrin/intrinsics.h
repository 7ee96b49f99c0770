// The shipped tensor intrinsics, one registration function per family (one file each), and the
// builders they share: the description of a dot product of vector lanes, and an implementation
// function around a body. Private to schedule/.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/ir/function.h"

namespace kiln::schedule {

// Registers one intrinsic: name, description, implementation, the target features it needs.
using IntrinRegistrar =
    std::function<void(const std::string&, const ir::Ref<ir::PrimFunc>&,
                       const ir::Ref<ir::PrimFunc>&, const std::vector<std::string>&)>;

// x86.avx512.vnni.*: u8 x s8 dot products accumulated in int32 (vpdpbusd).
void register_x86_avx512_vnni_intrinsics(const IntrinRegistrar& add);
// x86.avxvnni.*: the same on 256-bit vectors, VEX-encoded (AVX-VNNI's vpdpbusd on ymm).
void register_x86_avxvnni_intrinsics(const IntrinRegistrar& add);
// x86.avx512.bf16.*: bfloat16 dot products accumulated in float32 (vdpbf16ps).
void register_x86_avx512_bf16_intrinsics(const IntrinRegistrar& add);
// cuda.mma_*: warp-level float16 and bfloat16 matrix multiply-accumulate on tensor cores
// (mma.sync), with the loads, fill and store of its fragments.
void register_cuda_mma_intrinsics(const IntrinRegistrar& add);
// cuda.mma_f16f16f32_reference, cuda.mma_bf16bf16f32_reference: the multiply-accumulates of
// cuda.mma_f16f16f32 and cuda.mma_bf16bf16f32 in plain code, each lane computing the
// accumulator elements it owns.
void register_cuda_mma_reference_intrinsics(const IntrinRegistrar& add);

// A function with `params` as its buffer parameters and a root block around `body`.
ir::Ref<ir::PrimFunc> intrin_function(const std::vector<ir::Ref<ir::Buffer>>& params,
                                      ir::Stmt body);

// The fragments of the cuda.mma_* intrinsics. A 16x16 tile (of A, of B as [N, K], or of the
// float32 accumulator) lives in the registers of one warp as a "warp" buffer of shape [32, 8]:
// lane l holds 8 elements of the tile, the ones the PTX ISA gives thread l in the operands of
// two mma.m16n8k16 (the same for float16 and bfloat16: two .f16x2 or .bf16x2 registers of A or
// B per m16n8k16 half, or two float32 of C):
//   lane    = (row % 8) * 4 + (col % 8) // 2
//   element = (col // 8) * 4 + (row // 8) * 2 + col % 2
// so that elements 0-1, 2-3, 4-5, 6-7 of A are its registers a0..a3 and, for B as [N, K],
// elements 0-1 and 4-5 are b0, b1 of the columns 0-7 of N, 2-3 and 6-7 those of columns 8-15;
// elements 0-3 of C are c0..c3 of columns 0-7, 4-7 those of columns 8-15.
constexpr int kMmaLanes = 32;
constexpr int kMmaTile = 16;
constexpr int kMmaFragmentElements = 8;
ir::Expr mma_fragment_lane(const ir::Expr& row, const ir::Expr& col);
ir::Expr mma_fragment_element(const ir::Expr& row, const ir::Expr& col);
// The inverse: the row and column of the tile that element `element` of lane `lane` holds.
ir::Expr mma_fragment_row(const ir::Expr& lane, const ir::Expr& element);
ir::Expr mma_fragment_col(const ir::Expr& lane, const ir::Expr& element);
// A [32, 8] fragment buffer of `dtype` in the "warp" scope.
ir::Ref<ir::Buffer> mma_fragment_buffer(ir::DataType dtype, const std::string& name);
// The description shared by cuda.mma_f16f16f32 (cuda.mma_bf16bf16f32) and its reference over
// the fragments A, B (of B as [N, K]) and C:
//   for i, j, k in T.grid(16, 16, 16):
//     with T.block("mma"):
//       vi, vj, vk = T.axis.remap("SSR", [i, j, k])
//       C[lane(vi, vj), element(vi, vj)] += T.Cast("float32", A[lane(vi, vk), element(vi, vk)])
//                                         * T.Cast("float32", B[lane(vj, vk), element(vj, vk)])
ir::Ref<ir::PrimFunc> mma_sync_desc(const ir::Ref<ir::Buffer>& a, const ir::Ref<ir::Buffer>& b,
                                    const ir::Ref<ir::Buffer>& c);
// A loop over the 32 lanes of a warp (bound to threadIdx.x) around `body(lane)`.
ir::Stmt for_each_lane(const std::function<ir::Stmt(const ir::Expr&)>& body);

// The buffers of a lanes-wide dot product of depth `depth`: A (depth,), B (lanes, depth) and
// C (lanes,), in that order.
struct DotProductBuffers {
  ir::Ref<ir::Buffer> a, b, c;
};
DotProductBuffers dot_product_buffers(int lanes, int depth, ir::DataType a_dtype,
                                      ir::DataType b_dtype, ir::DataType acc_dtype);

// The description of a dot product over `buffers`:
//   for i, k in T.grid(lanes, depth):
//     with T.block("update"):
//       vi, vk = T.axis.remap("SR", [i, k])
//       C[vi] = C[vi] + T.Cast(acc, A[vk]) * T.Cast(acc, B[vi, vk])
ir::Ref<ir::PrimFunc> dot_product_desc(const DotProductBuffers& buffers);

// A function over `buffers` (A, B, C) whose root block runs `body`.
ir::Ref<ir::PrimFunc> intrin_impl(const DotProductBuffers& buffers, ir::Stmt body);

}  // namespace kiln::schedule
