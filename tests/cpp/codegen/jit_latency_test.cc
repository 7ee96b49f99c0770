// Compile latency of a small element-wise kernel through the JIT, printed (never a pass/fail
// criterion), plus the check that repeated compiles each give working code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// C[i] = max(A[i] + B[i], 0)
Ref<PrimFunc> relu_add() {
  Ref<Var> n = make_var("n");
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> b = buffer_1d("B", DataType::float32(), n);
  Ref<Buffer> c = buffer_1d("C", DataType::float32(), n);
  Ref<Var> i = make_var("i");
  Expr value = max(buffer_load(a, {i}) + buffer_load(b, {i}), make_const(DataType::float32(), 0.0));
  return packed_func("relu_add", {a, b, c},
                     bind_shape(n, 0, 0, serial(i, n, buffer_store(c, value, {i}))));
}

TEST(JitLatency, PrintsTheCompileTimeOfAnElementwiseKernel) {
  Ref<PrimFunc> func = relu_add();
  compile_jit({func}, host_target(), "");  // LLVM and the JIT start once per process
  std::vector<JitTimings> runs;
  for (int k = 0; k < 20; ++k) {
    auto module = compile_jit({func}, host_target(), "");
    runs.push_back(module->timings());
    Tensor<float> a(64, DataType::float32()), b(64, DataType::float32()),
        c(64, DataType::float32());
    for (int e = 0; e < 64; ++e) a[e] = static_cast<float>(e - 32);
    ASSERT_EQ(call_packed(*module, "relu_add",
                          {tensor_arg(a.dl()), tensor_arg(b.dl()), tensor_arg(c.dl())}),
              0);
    EXPECT_EQ(c[0], 0.0f);
    EXPECT_EQ(c[63], 31.0f);
  }
  std::sort(runs.begin(), runs.end(),
            [](const JitTimings& x, const JitTimings& y) { return x.total_ms < y.total_ms; });
  const JitTimings& median = runs[runs.size() / 2];
  std::printf(
      "compile_jit of an element-wise kernel on %s: median %.2f ms (codegen %.2f, optimize %.2f, "
      "machine code %.2f, link %.2f; CPU time %.2f ms), min %.2f ms, max %.2f ms\n",
      host_target().str().c_str(), median.total_ms, median.codegen_ms, median.optimize_ms,
      median.emit_ms, median.link_ms, median.cpu_ms, runs.front().total_ms, runs.back().total_ms);
}

}  // namespace
}  // namespace kiln::codegen::testing
