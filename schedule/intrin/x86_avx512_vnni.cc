// x86 AVX-512 VNNI tensor intrinsics: dot products of unsigned and signed bytes accumulated in
// 32-bit integers with vpdpbusd, 16 lanes of 4 products at a time.
#include "kiln/ir/op.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// C[i] += sum_{k < 4} A[k] * B[i, k] for i < 16: vpdpbusd multiplies the unsigned bytes of its
// second operand by the signed bytes of its third, sums each group of four products and adds
// the sums to the 32-bit lanes of its first operand (wrapping, not saturating). A's four bytes
// are one int32 broadcast to every lane; B's 16x4 bytes are the 16 lanes of the third operand.
Ref<PrimFunc> dot_16x4_u8s8s32_impl(const DotProductBuffers& buffers) {
  Expr lanes16 = ramp(int32_const(0), int32_const(1), 16);
  Expr c = buffer_load(buffers.c, {lanes16});
  Expr a = broadcast(call(DataType::int32(), Builtin::Reinterpret,
                          {buffer_load(buffers.a, {ramp(int32_const(0), int32_const(1), 4)})}),
                     16);
  Expr b =
      call(DataType::int_(32, 16), Builtin::Reinterpret,
           {buffer_load(buffers.b, {int32_const(0), ramp(int32_const(0), int32_const(1), 64)})});
  Expr dot = call(DataType::int_(32, 16), Builtin::CallLLVMPureIntrin,
                  {make<StringImm>("llvm.x86.avx512.vpdpbusd.512"), c, a, b});
  return intrin_impl(buffers, buffer_store(buffers.c, dot, {lanes16}));
}

}  // namespace

void register_x86_avx512_vnni_intrinsics(const IntrinRegistrar& add) {
  auto buffers = [] {
    return dot_product_buffers(16, 4, DataType::uint(8), DataType::int_(8), DataType::int32());
  };
  add("x86.avx512.vnni.dot_16x4_u8s8s32", dot_product_desc(buffers()),
      dot_16x4_u8s8s32_impl(buffers()), {"avx512f", "avx512vnni"});
}

}  // namespace kiln::schedule
