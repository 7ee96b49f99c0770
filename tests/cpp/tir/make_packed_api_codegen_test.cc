// The late passes end to end: a split loop with a vectorized inner loop and an exp goes through
// loop_partition, vectorize_loops, unroll_loops, lower_intrinsics and make_packed_api, is
// JIT-compiled by the LLVM code generator with the manifest built from kiln.arg_spec, and is
// called through the runtime, which checks the arguments against that spec.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "flat_program.h"
#include "kiln/codegen/jit.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/tir/loop_partition.h"
#include "kiln/tir/lower_intrinsics.h"
#include "kiln/tir/make_packed_api.h"
#include "kiln/tir/simplify.h"
#include "kiln/tir/unroll_loops.h"
#include "kiln/tir/vectorize_loops.h"
#include "kiln/tir/verify_ir.h"

namespace kiln::tir {
namespace {

using namespace flat_testing;

// B[i] = exp(A[i]) * alpha for i < n, as a split by 8 leaves it: the inner loop vectorized,
// the tail guarded by likely(io * 8 + ii < n).
Ref<PrimFunc> scaled_exp() {
  Ref<Var> n = make_size_var("n"), io = make_var("io"), ii = make_var("ii");
  Ref<Var> alpha = make_var("alpha", DataType::float32());
  Ref<Buffer> a = buffer_1d("A", n), b = buffer_1d("B", n);
  Expr index = io * 8 + ii;
  Stmt store = buffer_store(b, mul(call(Builtin::Exp, {buffer_load(a, {index})}), alpha), {index});
  Stmt body = loop(io, i32(0), floordiv(n + 7, i32(8)),
                   loop(ii, i32(0), i32(8), make<IfThenElse>(likely(lt(index, n)), store),
                        ForKind::kVectorized));
  return make_func({a, b, alpha}, body);
}

DLTensor tensor_1d(float* data, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}

TEST(PackedEntryCodegen, LoweredFunctionRunsThroughTheRuntime) {
  Ref<PrimFunc> flat = scaled_exp();
  Ref<PrimFunc> f = simplify(unroll_loops(vectorize_loops(loop_partition(flat))));
  f = lower_intrinsics(f);
  EXPECT_EQ(count_calls(f->body, Builtin::Exp), 0);
  EXPECT_GT(count_kind(f->body, NodeKind::Ramp), 0);

  // The numbers the interpreter gives for the lowered function, before the entry point.
  // The buffers declare no alignment, so the spec asks only for the element's; the arrays are
  // 64-byte aligned anyway, like the runtime's allocations.
  constexpr int64_t n = 37;
  struct alignas(64) Array {
    float v[n];
  };
  Array a_data{}, out_data{};
  float* a = a_data.v;
  float* out = out_data.v;
  for (int64_t k = 0; k < n; ++k) a[k] = -10.0f + 0.55f * static_cast<float>(k);
  std::vector<float> expected(n);
  interpreter::interpret(*f,
                         {interpreter::Argument::tensor(a, DataType::float32(), {n}),
                          interpreter::Argument::tensor(expected.data(), DataType::float32(), {n}),
                          interpreter::Argument::floating(0.5)});

  Ref<PrimFunc> entry = make_packed_api(f, "scaled_exp");
  verify_ir(entry, "make_packed_api");
  nlohmann::json manifest;
  manifest["abi_version"] = KILN_RUNTIME_ABI_VERSION;
  manifest["target"] = codegen::host_target().str();
  manifest["functions"] = {
      nlohmann::json::parse(entry->attrs.at("kiln.arg_spec").as<StringImm>()->value)};
  manifest["device_blobs"] = nlohmann::json::array();
  auto jit = codegen::compile_jit({entry}, codegen::host_target(), manifest.dump());
  KilnModuleHandle module = nullptr;
  ASSERT_EQ(KilnModuleCreate(jit->manifest().c_str(), nullptr, &codegen::JitModule::resolve,
                             jit.get(), &module),
            0)
      << KilnGetLastError();
  KilnFunctionHandle func = nullptr;
  ASSERT_EQ(KilnModuleGetFunction(module, "scaled_exp", &func), 0) << KilnGetLastError();

  int64_t shape_a = n, shape_b = n;
  DLTensor ta = tensor_1d(a, &shape_a), tb = tensor_1d(out, &shape_b);
  KilnValue values[3];
  int32_t codes[3] = {kKilnDLTensorHandle, kKilnDLTensorHandle, kKilnFloat};
  values[0].v_handle = &ta;
  values[1].v_handle = &tb;
  values[2].v_float64 = 0.5;
  ASSERT_EQ(KilnFuncCall(func, values, codes, 3), 0) << KilnGetLastError();
  // The compiled code computes what the interpreter computes, bit for bit.
  EXPECT_EQ(0, std::memcmp(out, expected.data(), n * sizeof(float)));

  // The runtime checks the arguments against the spec: n must agree between A and B.
  int64_t shorter = n - 1;
  tb.shape = &shorter;
  EXPECT_NE(KilnFuncCall(func, values, codes, 3), 0);
  EXPECT_NE(std::string(KilnGetLastError()).find("B"), std::string::npos) << KilnGetLastError();
  KilnModuleFree(module);
}

}  // namespace
}  // namespace kiln::tir
