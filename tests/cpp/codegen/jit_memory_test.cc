// JIT-compiled loads, stores and loops checked by running them: element-wise kernels (scalar,
// contiguous vectors, gathers), a reduction, stack and workspace allocations, asserts, and the
// laziness of if_then_else.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// C[i] = A[i] + B[i] for i < n, with n read from A's shape.
Ref<PrimFunc> vector_add_scalar() {
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> b = buffer_1d("B", DataType::float32(), n);
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), n);
  Ref<Var> i = make_var("i");
  Stmt loop = serial(i, n, buffer_store(c, buffer_load(a, {i}) + buffer_load(b, {i}), {i}));
  return packed_func("vadd", {a, b, c}, bind_shape(n, 0, 0, loop));
}

TEST(JitMemory, VectorAddScalarLoop) {
  auto module = jit(vector_add_scalar());
  const size_t n = 1000;
  Tensor<float> a(n, DataType::float32()), b(n, DataType::float32()), c(n, DataType::float32());
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i) * 0.5f;
    b[i] = 3.0f - static_cast<float>(i);
  }
  ASSERT_EQ(
      call_packed(*module, "vadd", {tensor_arg(a.dl()), tensor_arg(b.dl()), tensor_arg(c.dl())}),
      0);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(c[i], a[i] + b[i]) << i;
}

TEST(JitMemory, VectorAddWithRampIndices) {
  // for io in [0, n / 8): C[ramp(io * 8, 1, 8)] = A[...] + B[...] (contiguous vector accesses).
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> b = buffer_1d("B", DataType::float32(), n);
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), n);
  Ref<Var> io = make_var("io");
  Expr index = ramp(io * 8, int32_const(1), 8);
  Stmt loop = serial(io, floordiv(n, int32_const(8)),
                     buffer_store(c, buffer_load(a, {index}) + buffer_load(b, {index}), {index}));
  auto module = jit(packed_func("vadd8", {a, b, c}, bind_shape(n, 0, 0, loop)));
  const size_t len = 256;
  Tensor<float> ta(len, DataType::float32()), tb(len, DataType::float32()),
      tc(len, DataType::float32());
  for (size_t i = 0; i < len; ++i) {
    ta[i] = static_cast<float>(i);
    tb[i] = static_cast<float>(2 * i) + 0.25f;
  }
  ASSERT_EQ(call_packed(*module, "vadd8",
                        {tensor_arg(ta.dl()), tensor_arg(tb.dl()), tensor_arg(tc.dl())}),
            0);
  for (size_t i = 0; i < len; ++i) EXPECT_EQ(tc[i], ta[i] + tb[i]) << i;
  EXPECT_NE(module->get_source("ll").find("load <8 x float>"), std::string::npos);
}

TEST(JitMemory, UnrolledAndVectorizedLoopsRunEveryIteration) {
  // out[i] = i * 3 with kUnrolled (unroll metadata) and kVectorized (compiled as serial) loops,
  // and an int64 loop variable whose bounds are int32.
  for (ForKind kind : {ForKind::kUnrolled, ForKind::kVectorized}) {
    Ref<Buffer> out = buffer_1d("out", DataType::int64(), int32_const(12));
    Ref<Var> i = make_var("i", DataType::int64());
    Stmt loop = make<For>(i, int32_const(2), int32_const(10), kind, buffer_store(out, i * 3, {i}));
    auto module = jit(packed_func("loop", {out}, loop));
    Tensor<int64_t> t(12, DataType::int64());
    ASSERT_EQ(call_packed(*module, "loop", {tensor_arg(t.dl())}), 0);
    for (int k = 0; k < 12; ++k) EXPECT_EQ(t[k], k >= 2 ? 3 * k : 0) << k;
  }
}

TEST(JitMemory, StridedVectorLoadIsAGather) {
  // B[ramp(8 * j, 1, 8)] = A[ramp(2 * (8 * j), 2, 8)]: every second element.
  Ref<Buffer> a = buffer_1d("A", DataType::int32(), int32_const(64));
  Ref<Buffer> b = buffer_1d("B", DataType::int32(), int32_const(32));
  Ref<Var> j = make_var("j");
  Stmt loop = serial(j, int32_const(4),
                     buffer_store(b, buffer_load(a, {ramp(j * 16, int32_const(2), 8)}),
                                  {ramp(j * 8, int32_const(1), 8)}));
  auto module = jit(packed_func("gather", {a, b}, loop));
  Tensor<int32_t> ta(64, DataType::int32()), tb(32, DataType::int32());
  for (int i = 0; i < 64; ++i) ta[i] = i * 10;
  ASSERT_EQ(call_packed(*module, "gather", {tensor_arg(ta.dl()), tensor_arg(tb.dl())}), 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(tb[i], 2 * i * 10) << i;
}

TEST(JitMemory, ScatterStoresEachLane) {
  // B[ramp(7, -1, 8)] = A[ramp(0, 1, 8)]: reversed.
  Ref<Buffer> a = buffer_1d("A", DataType::float64(), int32_const(8));
  Ref<Buffer> b = buffer_1d("B", DataType::float64(), int32_const(8));
  Stmt store = buffer_store(b, buffer_load(a, {ramp(int32_const(0), int32_const(1), 8)}),
                            {ramp(int32_const(7), int32_const(-1), 8)});
  auto module = jit(packed_func("reverse", {a, b}, store));
  Tensor<double> ta(8, DataType::float64()), tb(8, DataType::float64());
  for (int i = 0; i < 8; ++i) ta[i] = i + 0.5;
  ASSERT_EQ(call_packed(*module, "reverse", {tensor_arg(ta.dl()), tensor_arg(tb.dl())}), 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(tb[i], 7 - i + 0.5) << i;
}

TEST(JitMemory, SumReduction) {
  // S[0] = 0; for i: S[0] = S[0] + A[i]
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float64(), n);
  Ref<Buffer> s = buffer_1d("S", DataType::float64(), int32_const(1));
  Ref<Var> i = make_var("i");
  Stmt body = seq({buffer_store(s, make_const(DataType::float64(), 0.0), {int32_const(0)}),
                   serial(i, n,
                          buffer_store(s, buffer_load(s, {int32_const(0)}) + buffer_load(a, {i}),
                                       {int32_const(0)}))});
  auto module = jit(packed_func("sum", {a, s}, bind_shape(n, 0, 0, body)));
  const size_t len = 777;
  Tensor<double> ta(len, DataType::float64()), ts(1, DataType::float64());
  double expected = 0;
  for (size_t k = 0; k < len; ++k) {
    ta[k] = 1.0 / static_cast<double>(k + 1);
    expected += ta[k];
  }
  ASSERT_EQ(call_packed(*module, "sum", {tensor_arg(ta.dl()), tensor_arg(ts.dl())}), 0);
  EXPECT_EQ(ts[0], expected);  // same order of additions: exactly equal without fast math
}

// out[i] = sum of tmp[k] for k < 3, where tmp[k] = A[i] * (k + 1) lives in an Allocate of
// `count` elements (all of them written, so the workspace case writes a large buffer).
Ref<PrimFunc> scratch_func(const std::string& symbol, Expr count) {
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), n);
  Ref<Buffer> tmp = buffer_1d("tmp", DataType::float32(), count);
  Ref<Var> i = make_var("i"), k = make_var("k");
  Stmt fill = serial(
      k, count,
      buffer_store(tmp,
                   buffer_load(a, {i}) * cast(DataType::float32(), floormod(k, int32_const(3)) + 1),
                   {k}));
  Stmt total =
      buffer_store(out,
                   buffer_load(tmp, {int32_const(0)}) + buffer_load(tmp, {int32_const(1)}) +
                       buffer_load(tmp, {int32_const(2)}),
                   {i});
  Stmt body = serial(i, n, make<Allocate>(tmp, seq({fill, total})));
  return packed_func(symbol, {a, out}, bind_shape(n, 0, 0, body));
}

void check_scratch(const JitModule& module, const std::string& symbol) {
  Tensor<float> a(16, DataType::float32()), out(16, DataType::float32());
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i);
  ASSERT_EQ(call_packed(module, symbol, {tensor_arg(a.dl()), tensor_arg(out.dl())}), 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[i], 6.0f * static_cast<float>(i)) << i;
}

TEST(JitMemory, SmallConstantAllocateIsOnTheStack) {
  auto module = jit(scratch_func("stack_alloc", int32_const(4)));
  check_scratch(*module, "stack_alloc");
  std::string ll = module->get_source("ll");
  EXPECT_EQ(ll.find("KilnBackendAllocWorkspace"), std::string::npos);
}

TEST(JitMemory, LargeAllocateUsesTheWorkspace) {
  auto module = jit(scratch_func("workspace_alloc", int32_const(100000)));
  check_scratch(*module, "workspace_alloc");
  std::string ll = module->get_source("ll");
  EXPECT_NE(ll.find("KilnBackendAllocWorkspace"), std::string::npos);
  EXPECT_NE(ll.find("KilnBackendFreeWorkspace"), std::string::npos);
}

TEST(JitMemory, DynamicAllocateUsesTheWorkspace) {
  Ref<Var> m = make_var("m");
  Ref<PrimFunc> func = scratch_func("dynamic_alloc", m);
  func->body = make<LetStmt>(m, int32_const(3), func->body);
  auto module = jit(func);
  check_scratch(*module, "dynamic_alloc");
  EXPECT_NE(module->get_source("ll").find("KilnBackendAllocWorkspace"), std::string::npos);
}

TEST(JitMemory, FailedAssertSetsTheMessageAndReturnsNonzero) {
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Var> i = make_var("i");
  Stmt body =
      make<AssertStmt>(lt(n, int32_const(10)), "main: A has more than 9 elements",
                       serial(i, n, buffer_store(a, make_const(DataType::float32(), 1.0), {i})));
  auto module = jit(packed_func("checked", {a}, bind_shape(n, 0, 0, body)));
  Tensor<float> small(5, DataType::float32()), large(20, DataType::float32());
  EXPECT_EQ(call_packed(*module, "checked", {tensor_arg(small.dl())}), 0);
  EXPECT_EQ(small[4], 1.0f);
  KilnSetLastError(nullptr);
  EXPECT_NE(call_packed(*module, "checked", {tensor_arg(large.dl())}), 0);
  EXPECT_STREQ(KilnGetLastError(), "main: A has more than 9 elements");
  EXPECT_EQ(large[0], 0.0f);
}

TEST(JitMemory, FailedAssertInsideAnAllocateFreesTheWorkspace) {
  // The error return inside the Allocate must free the workspace: a second call reuses it.
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> tmp = buffer_1d("tmp", DataType::float32(), int32_const(1 << 20));
  Stmt body = make<Allocate>(
      tmp,
      make<AssertStmt>(lt(n, int32_const(10)), "too large",
                       buffer_store(tmp, make_const(DataType::float32(), 1.0), {int32_const(0)})));
  auto module = jit(packed_func("assert_in_alloc", {a}, bind_shape(n, 0, 0, body)));
  Tensor<float> large(20, DataType::float32());
  for (int k = 0; k < 3; ++k) {
    EXPECT_NE(call_packed(*module, "assert_in_alloc", {tensor_arg(large.dl())}), 0);
    EXPECT_STREQ(KilnGetLastError(), "too large");
  }
  EXPECT_NE(module->get_source("ll").find("KilnBackendFreeWorkspace"), std::string::npos);
}

TEST(JitMemory, IfThenElseDoesNotEvaluateTheArmItDoesNotPick) {
  // out[i] = if_then_else(i < n_valid, A[i * 2^40], -1): evaluating the load for any i >= 1
  // would read far outside any mapping and fault. n_valid = 1, so only A[0] is read.
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), int32_const(4));
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), int32_const(4));
  Ref<Var> i = make_var("i", DataType::int64());
  Expr far = i * make_const(DataType::int64(), int64_t{1} << 40);
  Expr value =
      if_then_else(lt(i, i64(1)), buffer_load(a, {far}), make_const(DataType::float32(), -1.0));
  Stmt loop = make<For>(i, i64(0), i64(4), ForKind::kSerial, buffer_store(out, value, {i}));
  auto module = jit(packed_func("guarded", {a, out}, loop));
  Tensor<float> ta(4, DataType::float32()), tout(4, DataType::float32());
  ta[0] = 42.0f;
  ASSERT_EQ(call_packed(*module, "guarded", {tensor_arg(ta.dl()), tensor_arg(tout.dl())}), 0);
  EXPECT_EQ(tout[0], 42.0f);
  for (int k = 1; k < 4; ++k) EXPECT_EQ(tout[k], -1.0f);
}

TEST(JitMemory, BoolBuffersAreBytes) {
  // flags[i] = A[i] > 0; B[i] = select(flags[i], 1, 2)
  Ref<Buffer> a = buffer_1d("A", DataType::int32(), int32_const(8));
  Ref<Buffer> flags = buffer_1d("flags", DataType::bool_(), int32_const(8));
  Ref<Buffer> b = buffer_1d("B", DataType::int32(), int32_const(8));
  Ref<Var> i = make_var("i");
  Stmt body = serial(
      i, int32_const(8),
      seq({buffer_store(flags, gt(buffer_load(a, {i}), int32_const(0)), {i}),
           buffer_store(b, select(buffer_load(flags, {i}), int32_const(1), int32_const(2)), {i})}));
  auto module = jit(packed_func("flags", {a, flags, b}, body));
  Tensor<int32_t> ta(8, DataType::int32()), tb(8, DataType::int32());
  Tensor<uint8_t> tf(8, DataType::bool_());
  for (int k = 0; k < 8; ++k) ta[k] = k % 2 == 0 ? k : -k;
  ASSERT_EQ(call_packed(*module, "flags",
                        {tensor_arg(ta.dl()), tensor_arg(tf.dl()), tensor_arg(tb.dl())}),
            0);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(tf[k], ta[k] > 0 ? 1 : 0) << k;
    EXPECT_EQ(tb[k], ta[k] > 0 ? 1 : 2) << k;
  }
}

TEST(JitMemory, NoaliasAttributeAddsAliasScopes) {
  Ref<PrimFunc> func = vector_add_scalar();
  func->attrs["kiln.noalias"] = bool_const(true);
  auto module = jit(func);
  EXPECT_NE(module->get_source("ll").find("!alias.scope"), std::string::npos);
  const size_t n = 100;
  Tensor<float> a(n, DataType::float32()), b(n, DataType::float32()), c(n, DataType::float32());
  for (size_t i = 0; i < n; ++i) a[i] = b[i] = static_cast<float>(i);
  ASSERT_EQ(
      call_packed(*module, "vadd", {tensor_arg(a.dl()), tensor_arg(b.dl()), tensor_arg(c.dl())}),
      0);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(c[i], 2.0f * static_cast<float>(i));
}

TEST(JitMemory, ScalarArgumentsAreRead) {
  // out[i] = A[i] * alpha + offset, alpha a float argument, offset an int argument.
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), n);
  Ref<Var> alpha = make_var("alpha", DataType::float32());
  Ref<Var> offset = make_var("offset", DataType::int32());
  Ref<Var> i = make_var("i");
  Stmt loop = serial(
      i, n,
      buffer_store(out, buffer_load(a, {i}) * alpha + cast(DataType::float32(), offset), {i}));
  Stmt body = make<LetStmt>(
      alpha,
      cast(DataType::float32(),
           call(DataType::float64(), Builtin::PackedArgFloat, {int32_const(2)})),
      make<LetStmt>(
          offset,
          cast(DataType::int32(), call(DataType::int64(), Builtin::PackedArgInt, {int32_const(3)})),
          bind_shape(n, 0, 0, loop)));
  auto module = jit(packed_func("axpb", {a, out}, body));
  Tensor<float> ta(10, DataType::float32()), tout(10, DataType::float32());
  for (int k = 0; k < 10; ++k) ta[k] = static_cast<float>(k);
  ASSERT_EQ(call_packed(*module, "axpb",
                        {tensor_arg(ta.dl()), tensor_arg(tout.dl()), float_arg(1.5), int_arg(-7)}),
            0);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(tout[k], static_cast<float>(k) * 1.5f - 7.0f);
}

TEST(JitMemory, ByteOffsetIsApplied) {
  auto module = jit(vector_add_scalar());
  // 16 floats in. The buffers declare no alignment, so the argument checks ask only for the
  // element's; the offset keeps the data 64-byte aligned all the same.
  Tensor<float> a(32, DataType::float32()), b(32, DataType::float32()), c(32, DataType::float32());
  for (int k = 0; k < 32; ++k) a[k] = b[k] = static_cast<float>(k);
  a.dl()->byte_offset = 16 * sizeof(float);
  int64_t shape = 8;
  a.dl()->shape = &shape;
  ASSERT_EQ(
      call_packed(*module, "vadd", {tensor_arg(a.dl()), tensor_arg(b.dl()), tensor_arg(c.dl())}),
      0);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(c[k], static_cast<float>(2 * k + 16)) << k;
}

}  // namespace
}  // namespace kiln::codegen::testing
