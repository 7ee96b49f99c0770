// compile_jit from several threads at once: the process-wide JIT and the pool of target
// machines are shared, every module still gets working code of its own.
#include <gtest/gtest.h>

#include <thread>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// out[i] = A[i] * k for a constant k, so that each thread's function differs.
Ref<PrimFunc> scale_by(int k) {
  Ref<Buffer> a = buffer_1d("A", DataType::int32(), int32_const(32));
  Ref<Buffer> out = buffer_1d("out", DataType::int32(), int32_const(32));
  Ref<Var> i = make_var("i");
  Stmt loop = serial(i, int32_const(32), buffer_store(out, buffer_load(a, {i}) * k, {i}));
  return packed_func("scale", {a, out}, loop);
}

TEST(JitThreads, ConcurrentCompilesGiveIndependentModules) {
  const int threads = 4, rounds = 3;
  std::vector<int> failures(threads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &failures] {
      for (int r = 0; r < rounds; ++r) {
        int k = t * 10 + r + 1;
        auto module = jit(scale_by(k));
        Tensor<int32_t> a(32, DataType::int32()), out(32, DataType::int32());
        for (int e = 0; e < 32; ++e) a[e] = e;
        if (call_packed(*module, "scale", {tensor_arg(a.dl()), tensor_arg(out.dl())}) != 0) {
          ++failures[t];
        }
        for (int e = 0; e < 32; ++e) {
          if (out[e] != e * k) ++failures[t];
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::codegen::testing
