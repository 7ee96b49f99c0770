// x86 AVX-512 BF16 tensor intrinsics: dot products of bfloat16 pairs accumulated in float32 with
// vdpbf16ps, 16 lanes of 2 products at a time.
#include "kiln/ir/op.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// C[i] += sum_{k < 2} A[k] * B[i, k] for i < 16: vdpbf16ps multiplies the pairs of bfloat16 in
// each 32-bit lane of its second and third operands and adds both products to the float32 lane
// of its first operand. A's pair is one 32-bit value broadcast to every lane; B's 16x2 values
// are the 16 lanes of the third operand. The operands are passed as 32-bit lanes, which the
// code generator reinterprets as the intrinsic's bfloat16 vectors.
Ref<PrimFunc> dot_16x2_bf16bf16f32_impl(const DotProductBuffers& buffers) {
  Expr lanes16 = ramp(int32_const(0), int32_const(1), 16);
  Expr c = buffer_load(buffers.c, {lanes16});
  Expr a = broadcast(call(DataType::int32(), Builtin::Reinterpret,
                          {buffer_load(buffers.a, {ramp(int32_const(0), int32_const(1), 2)})}),
                     16);
  Expr b =
      call(DataType::int_(32, 16), Builtin::Reinterpret,
           {buffer_load(buffers.b, {int32_const(0), ramp(int32_const(0), int32_const(1), 32)})});
  Expr dot = call(DataType::float_(32, 16), Builtin::CallLLVMPureIntrin,
                  {make<StringImm>("llvm.x86.avx512bf16.dpbf16ps.512"), c, a, b});
  return intrin_impl(buffers, buffer_store(buffers.c, dot, {lanes16}));
}

}  // namespace

void register_x86_avx512_bf16_intrinsics(const IntrinRegistrar& add) {
  auto buffers = [] {
    return dot_product_buffers(16, 2, DataType::bfloat16(), DataType::bfloat16(),
                               DataType::float32());
  };
  add("x86.avx512.bf16.dot_16x2_bf16bf16f32", dot_product_desc(buffers()),
      dot_16x2_bf16bf16f32_impl(buffers()), {"avx512bw", "avx512bf16"});
}

}  // namespace kiln::schedule
