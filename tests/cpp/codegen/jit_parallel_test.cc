// Parallel loops run through the runtime's thread pool: results, that the work was split into
// tasks, errors raised inside a task, and the rejection of nested parallel loops.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>

#include "codegen_test_util.h"

namespace kiln::codegen::testing {
namespace {

// out[i * m + j] = A[i * m + j] * 2 + i for a parallel i and a serial j.
Ref<PrimFunc> parallel_scale(const std::string& symbol, int n, int m, Attrs attrs = {}) {
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), int32_const(n * m));
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), int32_const(n * m));
  Ref<Var> i = make_var("i"), j = make_var("j");
  Expr index = i * m + j;
  Stmt inner = serial(j, int32_const(m),
                      buffer_store(out,
                                   buffer_load(a, {index}) * make_const(DataType::float32(), 2.0) +
                                       cast(DataType::float32(), i),
                                   {index}));
  return packed_func(symbol, {a, out}, serial(i, int32_const(n), inner, ForKind::kParallel),
                     std::move(attrs));
}

// Counts the tasks a launch runs by wrapping the runtime's KilnBackendParallelLaunch.
struct TaskCounter {
  static std::atomic<int> launches;
  static std::atomic<int> tasks;
  static std::mutex mutex;
  static std::set<int> task_ids;
  struct Wrapped {
    KilnParallelTask task;
    void* closure;
  };
  static int32_t count_task(int32_t task_id, int32_t num_tasks, void* closure) {
    ++tasks;
    {
      std::lock_guard<std::mutex> lock(mutex);
      task_ids.insert(task_id);
    }
    auto* wrapped = static_cast<Wrapped*>(closure);
    return wrapped->task(task_id, num_tasks, wrapped->closure);
  }
  static int32_t launch(KilnParallelTask task, void* closure, int32_t num_tasks) {
    ++launches;
    Wrapped wrapped{task, closure};
    return KilnBackendParallelLaunch(&count_task, &wrapped, num_tasks);
  }
};
std::atomic<int> TaskCounter::launches{0};
std::atomic<int> TaskCounter::tasks{0};
std::mutex TaskCounter::mutex;
std::set<int> TaskCounter::task_ids;

TEST(JitParallel, ParallelLoopComputesEveryIterationInTasks) {
  const int n = 37, m = 5;
  ASSERT_EQ(KilnSetNumThreads(4), 0);
  auto module =
      compile_jit({parallel_scale("pscale", n, m)}, host_target(), "",
                  {{"KilnBackendParallelLaunch", reinterpret_cast<void*>(&TaskCounter::launch)}});
  Tensor<float> a(n * m, DataType::float32()), out(n * m, DataType::float32());
  for (int k = 0; k < n * m; ++k) a[k] = static_cast<float>(k);
  TaskCounter::launches = 0;
  TaskCounter::tasks = 0;
  ASSERT_EQ(call_packed(*module, "pscale", {tensor_arg(a.dl()), tensor_arg(out.dl())}), 0)
      << KilnGetLastError();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) {
      EXPECT_EQ(out[i * m + j], 2.0f * static_cast<float>(i * m + j) + static_cast<float>(i));
    }
  }
  // Four tasks per pool thread, handed out as threads come free.
  EXPECT_EQ(TaskCounter::launches.load(), 1);
  EXPECT_EQ(TaskCounter::tasks.load(), 16);
  std::set<int> ids;
  for (int t = 0; t < 16; ++t) ids.insert(t);
  EXPECT_EQ(TaskCounter::task_ids, ids);
  KilnSetNumThreads(0);
}

TEST(JitParallel, ParallelLoopWithFewerIterationsThanThreads) {
  ASSERT_EQ(KilnSetNumThreads(8), 0);
  auto module = jit(parallel_scale("psmall", 3, 2));
  Tensor<float> a(6, DataType::float32()), out(6, DataType::float32());
  for (int k = 0; k < 6; ++k) a[k] = 1.0f;
  ASSERT_EQ(call_packed(*module, "psmall", {tensor_arg(a.dl()), tensor_arg(out.dl())}), 0);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[5], 4.0f);
  KilnSetNumThreads(0);
}

TEST(JitParallel, ParallelBodyUsesOuterValuesAndAllocates) {
  // for i in parallel(n): tmp = alloc[4]; tmp[k] = A[i] + bias; out[i] = tmp[0] + tmp[3],
  // where n and bias come from the packed arguments outside the loop.
  Ref<Var> n = make_var("n");
  Ref<Var> bias = make_var("bias", DataType::float32());
  Ref<Buffer> a = buffer_1d("A", DataType::float32(), n);
  Ref<Buffer> out = buffer_1d("out", DataType::float32(), n);
  Ref<Buffer> tmp = buffer_1d("tmp", DataType::float32(), int32_const(4));
  tmp->scope = "local";
  Ref<Var> i = make_var("i"), k = make_var("k");
  Stmt body = make<Allocate>(
      tmp, seq({serial(k, int32_const(4), buffer_store(tmp, buffer_load(a, {i}) + bias, {k})),
                buffer_store(
                    out, buffer_load(tmp, {int32_const(0)}) + buffer_load(tmp, {int32_const(3)}),
                    {i})}));
  Stmt loop = serial(i, n, body, ForKind::kParallel);
  Stmt bound =
      make<LetStmt>(bias,
                    cast(DataType::float32(),
                         call(DataType::float64(), Builtin::PackedArgFloat, {int32_const(2)})),
                    bind_shape(n, 0, 0, loop));
  auto module = jit(packed_func("pbias", {a, out}, bound));
  Tensor<float> ta(100, DataType::float32()), tout(100, DataType::float32());
  for (int e = 0; e < 100; ++e) ta[e] = static_cast<float>(e);
  ASSERT_EQ(
      call_packed(*module, "pbias", {tensor_arg(ta.dl()), tensor_arg(tout.dl()), float_arg(0.5)}),
      0);
  for (int e = 0; e < 100; ++e) EXPECT_EQ(tout[e], 2.0f * (static_cast<float>(e) + 0.5f)) << e;
}

TEST(JitParallel, ErrorInsideATaskIsReturned) {
  // An assert that fails for i == 13 inside the parallel body.
  Ref<Buffer> out = buffer_1d("out", DataType::int32(), int32_const(64));
  Ref<Var> i = make_var("i");
  Stmt body = make<AssertStmt>(ne(i, int32_const(13)), "pfail: iteration 13 failed",
                               buffer_store(out, i, {i}));
  auto module =
      jit(packed_func("pfail", {out}, serial(i, int32_const(64), body, ForKind::kParallel)));
  Tensor<int32_t> tout(64, DataType::int32());
  KilnSetLastError(nullptr);
  EXPECT_NE(call_packed(*module, "pfail", {tensor_arg(tout.dl())}), 0);
  EXPECT_STREQ(KilnGetLastError(), "pfail: iteration 13 failed");
}

TEST(JitParallelErrors, NestedParallelLoopsAreRejected) {
  Ref<Buffer> out = buffer_1d("out", DataType::int32(), int32_const(64));
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt inner = serial(j, int32_const(8), buffer_store(out, i + j, {i * 8 + j}), ForKind::kParallel);
  Stmt outer = serial(i, int32_const(8), seq({inner}), ForKind::kParallel);
  std::string msg = error_of([&] { jit(packed_func("nested", {out}, outer)); });
  EXPECT_NE(
      msg.find("codegen: parallel loop j of function nested is nested inside parallel loop i"),
      std::string::npos)
      << msg;
  EXPECT_NE(msg.find("sch.fuse(i, j)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::codegen::testing
