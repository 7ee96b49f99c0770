// GPU semantics of the reference interpreter, on programs written by hand as lowering leaves
// them: thread blocks whose threads step from barrier to barrier, shared memory per block, local
// memory per thread, and the missing-barrier and divergent-barrier errors.
#include <gtest/gtest.h>

#include <cstdint>

#include "func_builder.h"

namespace kiln::interpreter::testing {
namespace {

const DataType f32 = DataType::float32();
const DataType i32 = DataType::int32();

#define EXPECT_MESSAGE(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

Stmt bound(const Ref<Var>& var, int64_t extent, const std::string& tag, Stmt body) {
  auto loop =
      make<For>(var, int32_const(0), int32_const(extent), ForKind::kThreadBinding, std::move(body));
  loop->thread_tag = tag;
  return loop;
}

Stmt barrier() {
  return make<Evaluate>(call(Builtin::StorageSync, {make<StringImm>("shared")}));
}

Ref<Buffer> scoped_buffer(int64_t extent, DataType dtype, const std::string& name,
                          const std::string& scope) {
  return decl_buffer({int32_const(extent)}, dtype, name, scope);
}

// Two blocks of 64 threads: S[tx] = A[bx * 64 + tx], then B[bx * 64 + tx] = S[read(tx)], with a
// barrier between the two when `with_barrier`.
Ref<PrimFunc> exchange(bool with_barrier, const std::function<Expr(Expr)>& read) {
  auto A = buffer({128}, f32, "A");
  auto B = buffer({128}, f32, "B");
  auto S = scoped_buffer(64, f32, "S", "shared");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx");
  Expr global = bx * 64 + tx;
  std::vector<Stmt> body = {buffer_store(S, buffer_load(A, {global}), {tx})};
  if (with_barrier) body.push_back(barrier());
  body.push_back(buffer_store(B, buffer_load(S, {read(tx)}), {global}));
  return make_func({A, B}, bound(bx, 2, "blockIdx.x",
                                 make<Allocate>(S, bound(tx, 64, "threadIdx.x", seq(body)))));
}

std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int k = 0; k < n; ++k) v[k] = static_cast<float>(k);
  return v;
}

TEST(InterpretGpu, BarrierOrdersSharedMemory) {
  auto func = exchange(true, [](Expr tx) { return 63 - tx; });
  std::vector<float> a = iota(128), b(128);
  interpret(*func, {array(a, f32), array(b, f32)});
  for (int k = 0; k < 128; ++k) EXPECT_EQ(b[k], a[k / 64 * 64 + 63 - k % 64]) << k;
}

TEST(InterpretGpu, ReadOfAnotherThreadsWriteNeedsABarrier) {
  auto func = exchange(false, [](Expr tx) { return max(tx - 1, int32_const(0)); });
  std::vector<float> a = iota(128), b(128);
  std::string msg = error_of([&] {
    interpret(*func, {array(a, f32), array(b, f32)}, Options{GpuSemantics::kOn, {}});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: thread (1, 0, 0) of block (0, 0, 0) reads S[0], which thread "
                 "(0, 0, 0) wrote since the last barrier: a storage_sync is missing between "
                 "them");
}

TEST(InterpretGpu, WriteOverAnotherThreadsReadNeedsABarrier) {
  auto func = exchange(false, [](Expr tx) { return 63 - tx; });
  std::vector<float> a = iota(128), b(128);
  std::string msg = error_of([&] {
    interpret(*func, {array(a, f32), array(b, f32)}, Options{GpuSemantics::kOn, {}});
  });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: thread (32, 0, 0) of block (0, 0, 0) writes S[32], which "
                 "thread (31, 0, 0) read since the last barrier: a storage_sync is missing");
}

TEST(InterpretGpu, OwnElementsNeedNoBarrier) {
  auto func = exchange(false, [](Expr tx) { return tx; });
  std::vector<float> a = iota(128), b(128);
  interpret(*func, {array(a, f32), array(b, f32)}, Options{GpuSemantics::kOn, {}});
  EXPECT_EQ(b, a);
}

TEST(InterpretGpu, BarrierUnderAThreadConditionIsDivergent) {
  auto B = buffer({64}, f32, "B");
  auto S = scoped_buffer(64, f32, "S", "shared");
  Ref<Var> tx = make_var("tx");
  Stmt body = seq({buffer_store(S, make_const(f32, 1.0), {tx}),
                   make<IfThenElse>(lt(tx, int32_const(16)), barrier()),
                   buffer_store(B, buffer_load(S, {tx}), {tx})});
  auto func = make_func({B}, bound(tx, 64, "threadIdx.x", make<Allocate>(S, body)));
  std::vector<float> b(64);
  std::string msg = error_of([&] { interpret(*func, {array(b, f32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: thread (0, 0, 0) of block (0, 0, 0) waits at "
                 "storage_sync(\"shared\") #1 under `tx < 16`, but thread (16, 0, 0) "
                 "finished without reaching it: every thread of a block must reach each "
                 "barrier");
}

TEST(InterpretGpu, ThreadsAtDifferentBarriersAreDivergent) {
  auto B = buffer({8}, f32, "B");
  Ref<Var> tx = make_var("tx");
  Stmt body = seq({make<IfThenElse>(lt(tx, int32_const(4)), barrier(), barrier()),
                   buffer_store(B, make_const(f32, 1.0), {tx})});
  auto func = make_func({B}, bound(tx, 8, "threadIdx.x", body));
  std::vector<float> b(8);
  std::string msg = error_of([&] { interpret(*func, {array(b, f32)}); });
  EXPECT_MESSAGE(msg,
                 "waits at storage_sync(\"shared\") #1 under `tx < 4`, but thread "
                 "(4, 0, 0) waits at storage_sync(\"shared\") #2 under `not tx < 4`");
}

TEST(InterpretGpu, SharedMemoryIsPerBlock) {
  // Block 0 writes S[0]; block 1 reads its own S[0], which nobody wrote: garbage (0xCD bytes).
  auto B = buffer({2}, i32, "B");
  auto S = scoped_buffer(1, i32, "S", "shared");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx");
  Stmt body = seq(
      {make<IfThenElse>(eq(bx, int32_const(0)), buffer_store(S, int32_const(5), {int32_const(0)})),
       buffer_store(B, buffer_load(S, {int32_const(0)}), {bx})});
  auto func = make_func(
      {B}, bound(bx, 2, "blockIdx.x", make<Allocate>(S, bound(tx, 1, "threadIdx.x", body))));
  std::vector<int32_t> b(2);
  interpret(*func, {array(b, i32)});
  EXPECT_EQ(b[0], 5);
  EXPECT_EQ(static_cast<uint32_t>(b[1]), 0xCDCDCDCDu);
}

TEST(InterpretGpu, SharedMemoryIsOnePerBlockForAllThreads) {
  // Thread 0 writes S[0]; after the barrier every thread of the block reads it.
  auto B = buffer({8}, i32, "B");
  auto S = scoped_buffer(1, i32, "S", "shared");
  Ref<Var> tx = make_var("tx");
  Stmt body = seq(
      {make<IfThenElse>(eq(tx, int32_const(0)), buffer_store(S, int32_const(7), {int32_const(0)})),
       barrier(), buffer_store(B, buffer_load(S, {int32_const(0)}), {tx})});
  auto func = make_func({B}, bound(tx, 8, "threadIdx.x", make<Allocate>(S, body)));
  std::vector<int32_t> b(8);
  interpret(*func, {array(b, i32)});
  EXPECT_EQ(b, std::vector<int32_t>(8, 7));
}

TEST(InterpretGpu, LocalMemoryIsPerThread) {
  // Every thread writes its index to L[0]; after a barrier each reads its own back.
  auto B = buffer({8}, i32, "B");
  auto L = scoped_buffer(1, i32, "L", "local");
  Ref<Var> tx = make_var("tx");
  Stmt body = seq({buffer_store(L, tx, {int32_const(0)}), barrier(),
                   buffer_store(B, buffer_load(L, {int32_const(0)}), {tx})});
  auto func = make_func({B}, bound(tx, 8, "threadIdx.x", make<Allocate>(L, body)));
  std::vector<int32_t> b(8);
  interpret(*func, {array(b, i32)});
  EXPECT_EQ(b, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(InterpretGpu, BarrierInsideASerialLoop) {
  // Four rounds: thread t adds S[(t + 1) % 8] into its B[t]; S[t] = B[t] after a barrier.
  auto B = buffer({8}, i32, "B");
  auto S = scoped_buffer(8, i32, "S", "shared");
  Ref<Var> tx = make_var("tx"), k = make_var("k");
  Expr next = floormod(tx + 1, int32_const(8));
  Stmt round =
      seq({buffer_store(S, buffer_load(B, {tx}), {tx}), barrier(),
           buffer_store(B, buffer_load(B, {tx}) + buffer_load(S, {next}), {tx}), barrier()});
  auto func = make_func({B}, bound(tx, 8, "threadIdx.x", make<Allocate>(S, loop(k, 4, round))));
  std::vector<int32_t> b = {1, 0, 0, 0, 0, 0, 0, 0};
  interpret(*func, {array(b, i32)});
  // Round r doubles and shifts: after 4 rounds B[t] = C(4, (1 - t) mod 8) ... computed directly:
  std::vector<int32_t> expected = {1, 0, 0, 0, 0, 0, 0, 0};
  for (int r = 0; r < 4; ++r) {
    std::vector<int32_t> s = expected;
    for (int t = 0; t < 8; ++t) expected[t] += s[(t + 1) % 8];
  }
  EXPECT_EQ(b, expected);
}

TEST(InterpretGpu, ShorterLoopsAreGuardedAndSameTagIsSameIndex) {
  // The block has 8 threads (the longest loop); the loop of 4 runs on threads 0..3 only, and a
  // nested loop with the same tag is the same thread index.
  auto B = buffer({8}, i32, "B");
  auto C = buffer({4}, i32, "C");
  Ref<Var> t1 = make_var("t1"), t2 = make_var("t2"), t3 = make_var("t3");
  Stmt body = seq({bound(t1, 8, "threadIdx.x", buffer_store(B, t1 * 10, {t1})),
                   bound(t2, 4, "threadIdx.x",
                         bound(t3, 8, "threadIdx.x", buffer_store(C, t2 * 100 + t3, {t2})))});
  auto func = make_func({B, C}, body);
  std::vector<int32_t> b(8), c(4, -1);
  interpret(*func, {array(b, i32), array(c, i32)}, Options{GpuSemantics::kOn, {}});
  EXPECT_EQ(b, (std::vector<int32_t>{0, 10, 20, 30, 40, 50, 60, 70}));
  EXPECT_EQ(c, (std::vector<int32_t>{0, 101, 202, 303}));
}

TEST(InterpretGpu, WithoutBarriersTheDefaultIsSerial) {
  // Without storage_sync and without Options::gpu, thread-bound loops run one iteration after
  // another, as in scheduled TensorIR: no missing barrier is reported.
  auto func = exchange(false, [](Expr tx) { return 63 - tx; });
  std::vector<float> a = iota(128), b(128);
  std::string msg = error_of([&] { interpret(*func, {array(a, f32), array(b, f32)}); });
  EXPECT_EQ(msg, "");
}

TEST(InterpretGpu, StorageSyncWithoutGpuSemanticsIsRefused) {
  auto func = exchange(true, [](Expr tx) { return 63 - tx; });
  std::vector<float> a = iota(128), b(128);
  std::string msg = error_of([&] {
    interpret(*func, {array(a, f32), array(b, f32)}, Options{GpuSemantics::kOff, {}});
  });
  EXPECT_MESSAGE(msg,
                 "the builtin storage_sync is not supported by the interpreter: a barrier "
                 "between GPU threads has a meaning only with GPU semantics");
}

TEST(InterpretGpu, StorageSyncOutsideABoundLoopIsAnError) {
  auto A = buffer({1}, i32, "A");
  auto func = make_func({A}, barrier());
  std::vector<int32_t> a(1);
  std::string msg = error_of([&] { interpret(*func, {array(a, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: storage_sync outside every loop bound to a GPU block or "
                 "thread");
}

TEST(InterpretGpu, DeviceLaunchRunsTheNamedKernel) {
  // The host launches kernel "k0" with 2 blocks of 4 threads; the kernel's bound loops are
  // guarded by the launch extents.
  auto B = buffer({8}, i32, "B");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx");
  auto kernel = make<PrimFunc>();
  kernel->params = {B->data};
  kernel->body = bound(bx, 2, "blockIdx.x",
                       bound(tx, 4, "threadIdx.x", buffer_store(B, bx * 4 + tx, {bx * 4 + tx})));
  kernel->attrs["global_symbol"] = make<StringImm>("k0");
  kernel->attrs["kiln.device_kernel"] = bool_const(true);
  auto i64 = [](int64_t v) { return make_const(DataType::int64(), v); };
  Stmt launch = make<Evaluate>(call(i32, Builtin::DeviceLaunch,
                                    {make<StringImm>("k0"), int32_const(0), i64(2), i64(1), i64(1),
                                     i64(4), i64(1), i64(1), i64(0), B->data}));
  auto host = make_func({B}, launch);
  std::vector<int32_t> b(8, -1);
  interpret(*host, {array(b, i32)}, Options{GpuSemantics::kAuto, {kernel}});
  EXPECT_EQ(b, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::string msg = error_of([&] { interpret(*host, {array(b, i32)}); });
  EXPECT_MESSAGE(msg,
                 "tir.interpret: device_launch of kernel k0, which is not among the "
                 "kernels given");
}

}  // namespace
}  // namespace kiln::interpreter::testing
