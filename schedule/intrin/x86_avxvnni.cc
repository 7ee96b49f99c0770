// x86 AVX-VNNI tensor intrinsics: the 256-bit, VEX-encoded form of vpdpbusd on ymm registers,
// 8 lanes of 4 u8 x s8 products accumulated in 32-bit integers (Alder Lake, Sapphire Rapids).
#include "kiln/ir/op.h"
#include "schedule/intrin/intrinsics.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

// C[i] += sum_{k < 4} A[k] * B[i, k] for i < 8: as the AVX-512 form (x86_avx512_vnni.cc) on 8
// lanes. LLVM has one intrinsic for the 256-bit vpdpbusd of both extensions; it selects the VEX
// encoding (AVX-VNNI) where the target has avxvnni and not both avx512vl and avx512vnni, the
// EVEX one otherwise. Every target with avx512vl and avx512vnni has the 512-bit intrinsic, so
// this one asks for avxvnni only.
Ref<PrimFunc> dot_8x4_u8s8s32_impl(const DotProductBuffers& buffers) {
  Expr lanes8 = ramp(int32_const(0), int32_const(1), 8);
  Expr c = buffer_load(buffers.c, {lanes8});
  Expr a = broadcast(call(DataType::int32(), Builtin::Reinterpret,
                          {buffer_load(buffers.a, {ramp(int32_const(0), int32_const(1), 4)})}),
                     8);
  Expr b =
      call(DataType::int_(32, 8), Builtin::Reinterpret,
           {buffer_load(buffers.b, {int32_const(0), ramp(int32_const(0), int32_const(1), 32)})});
  Expr dot = call(DataType::int_(32, 8), Builtin::CallLLVMPureIntrin,
                  {make<StringImm>("llvm.x86.avx512.vpdpbusd.256"), c, a, b});
  return intrin_impl(buffers, buffer_store(buffers.c, dot, {lanes8}));
}

}  // namespace

void register_x86_avxvnni_intrinsics(const IntrinRegistrar& add) {
  auto buffers = [] {
    return dot_product_buffers(8, 4, DataType::uint(8), DataType::int_(8), DataType::int32());
  };
  add("x86.avxvnni.dot_8x4_u8s8s32", dot_product_desc(buffers()), dot_8x4_u8s8s32_impl(buffers()),
      {"avxvnni"});
}

}  // namespace kiln::schedule
