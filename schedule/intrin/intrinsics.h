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
