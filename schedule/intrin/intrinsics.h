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
// cuda.mma_*: warp-level float16, bfloat16 and int8 matrix multiply-accumulate on tensor cores
// (mma.sync), with the loads, fill and store of its fragments.
void register_cuda_mma_intrinsics(const IntrinRegistrar& add);
// cuda.mma_f16f16f32_reference, ...: the multiply-accumulates of cuda.mma_* in plain code,
// each lane computing the accumulator elements it owns.
void register_cuda_mma_reference_intrinsics(const IntrinRegistrar& add);

// A function with `params` as its buffer parameters and a root block around `body`.
ir::Ref<ir::PrimFunc> intrin_function(const std::vector<ir::Ref<ir::Buffer>>& params,
                                      ir::Stmt body);

// The fragments of the cuda.mma_* intrinsics. A lane holds the elements of a row in groups of
// g neighbours (mma_group): 2 for float16/bfloat16 operands (a .f16x2 register) and for the
// 32-bit accumulators (c0, c1), 4 for int8/uint8 operands (an .s8x4 register). A tile of 16 rows
// and 8 g columns (16x16 of A, of B as [N, K] or of the accumulator; 16x32 of an int8 A or B)
// lives in the registers of one warp as a "warp" buffer of shape [32, 4 g]: lane l holds the
// elements the PTX ISA gives thread l in the operands of two mma.m16n8k(8 g) (one per 8
// columns of the accumulator):
//   lane    = (row % 8) * 4 + (col % (4 g)) // g
//   element = (col // (4 g)) * 2 g + (row // 8) * g + col % g
// so that the registers a0..a3 of A are its element groups 0..3 and, for B as [N, K], groups 0
// and 2 are b0, b1 of the columns 0-7 of N, groups 1 and 3 those of columns 8-15; elements 0-3
// of the accumulator are c0..c3 of its columns 0-7, 4-7 those of columns 8-15.
constexpr int kMmaLanes = 32;
constexpr int kMmaTile = 16;  // the rows of every tile, the columns of the accumulator's
// g for an operand or accumulator of `dtype`.
int mma_group(ir::DataType dtype);
ir::Expr mma_fragment_lane(const ir::Expr& row, const ir::Expr& col, int group = 2);
ir::Expr mma_fragment_element(const ir::Expr& row, const ir::Expr& col, int group = 2);
// The inverse: the row and column of the tile that element `element` of lane `lane` holds.
ir::Expr mma_fragment_row(const ir::Expr& lane, const ir::Expr& element, int group = 2);
ir::Expr mma_fragment_col(const ir::Expr& lane, const ir::Expr& element, int group = 2);
// A [32, 4 g] fragment buffer of `dtype` in the "warp" scope.
ir::Ref<ir::Buffer> mma_fragment_buffer(ir::DataType dtype, const std::string& name);
// The multiply-accumulates: "cuda.mma_" + name (and + "_reference"), A x B into acc.
struct MmaFamily {
  std::string name;  // "f16f16f32", "bf16bf16f32", "s8s8s32", "u8s8s32"
  ir::DataType a, b, acc;
};
const std::vector<MmaFamily>& mma_families();
// "f16", "bf16", "s8", "u8", "f32", "s32": the element in the intrinsics' names.
std::string mma_element_name(ir::DataType dtype);
// The description shared by a multiply-accumulate (cuda.mma_f16f16f32, ..., cuda.mma_s8s8s32)
// and its reference over the fragments A, B (of B as [N, K]) and C, K = 8 g of A:
//   for i, j, k in T.grid(16, 16, K):
//     with T.block("mma"):
//       vi, vj, vk = T.axis.remap("SSR", [i, j, k])
//       C[lane(vi, vj), element(vi, vj)] += T.Cast(C.dtype, A[lane(vi, vk), element(vi, vk)])
//                                         * T.Cast(C.dtype, B[lane(vj, vk), element(vj, vk)])
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
