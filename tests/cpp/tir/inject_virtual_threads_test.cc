// Tests of inject_virtual_threads on flat programs built by hand: the virtual threads' loop
// wrapped around what depends on them, a shared fetch left to run once, the buffer a virtual
// thread keeps across it copied per virtual thread (golden IR); a vthread loop around nothing
// shared becoming one unrolled loop; nested vthread loops; a function without vthread loops
// returned as it is; the error for a symbolic extent. The numbers on the GPU interpreter and on
// OpenCL are in tests/python/test_lower_virtual_threads.py.
#include <gtest/gtest.h>

#include "kiln/ir/printer.h"
#include "kiln/tir/inject_virtual_threads.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

// The header's example: for bx in blockIdx.x(1): allocate S[4] shared;
//   for v in vthread.x(2): for tx in threadIdx.x(4): allocate acc[1] local:
//     acc[0] = 0
//     for k0 in range(4): S[tx] = A[k0 * 4 + tx]; acc[0] = acc[0] + S[v * 2]
//     C[v * 4 + tx] = acc[0]
Ref<PrimFunc> shared_fetch_under_vthread() {
  Ref<Buffer> a = buffer({16}, "A");
  Ref<Buffer> out = buffer({8}, "C");
  Ref<Buffer> s = buffer({4}, "S", DataType::float32(), "shared");
  Ref<Buffer> acc = buffer({1}, "acc", DataType::float32(), "local");
  Ref<Var> bx = make_var("bx"), v = make_var("v"), tx = make_var("tx"), k0 = make_var("k0");
  Stmt step =
      seq({buffer_store(s, buffer_load(a, {k0 * c(4) + tx}), {tx}),
           buffer_store(acc, buffer_load(acc, {c(0)}) + buffer_load(s, {v * c(2)}), {c(0)})});
  Stmt body =
      make<Allocate>(acc, seq({buffer_store(acc, f32(0), {c(0)}), loop(k0, 4, step),
                               buffer_store(out, buffer_load(acc, {c(0)}), {v * c(4) + tx})}));
  Stmt nest = thread_loop(v, 2, "vthread.x", thread_loop(tx, 4, "threadIdx.x", body));
  return make_func({a, out}, thread_loop(bx, 1, "blockIdx.x", make<Allocate>(s, nest)));
}

TEST(InjectVirtualThreads, SharedFetchRunsOnceAndTheAccumulatorGetsCopiesGolden) {
  Ref<PrimFunc> after = inject_virtual_threads(shared_fetch_under_vthread());
  EXPECT_EQ(to_script(after->body),
            R"(for bx in T.thread_binding(1, thread="blockIdx.x"):
    with T.allocate((4,), "float32", scope="shared") as S:
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            with T.allocate((2,), "float32", scope="local") as acc:
                for v in T.unroll(2):
                    acc[v] = T.float32(0)
                for k0 in range(4):
                    S[tx] = A[k0 * 4 + tx]
                    for v_1 in T.unroll(2):
                        acc[v_1] = acc[v_1] + S[v_1 * 2]
                for v_2 in T.unroll(2):
                    C[v_2 * 4 + tx] = acc[v_2])");
}

TEST(InjectVirtualThreads, NothingSharedBecomesOneUnrolledLoop) {
  // for v in vthread.x(2): for tx in threadIdx.x(4): B[v * 4 + tx] = A[v * 4 + tx] * 2
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Buffer> b = buffer({8}, "B");
  Ref<Var> v = make_var("v"), tx = make_var("tx");
  Stmt store = buffer_store(b, buffer_load(a, {v * c(4) + tx}) * f32(2), {v * c(4) + tx});
  Ref<PrimFunc> f =
      make_func({a, b}, thread_loop(v, 2, "vthread.x", thread_loop(tx, 4, "threadIdx.x", store)));
  Ref<PrimFunc> after = inject_virtual_threads(f);
  EXPECT_EQ(to_script(after->body), R"(for v in T.unroll(2):
    for tx in T.thread_binding(4, thread="threadIdx.x"):
        B[v * 4 + tx] = A[v * 4 + tx] * T.float32(2))");
  // Run serially, as the interpreter runs thread loops outside GPU semantics: same numbers.
  expect_same_results(f, after);
}

TEST(InjectVirtualThreads, NestedVirtualThreadsEachCopyTheAccumulator) {
  // for vy in vthread.y(2): for vx in vthread.x(3): the example's nest with v = vy * 3 + vx:
  // the accumulator gets 2 x 3 copies and the fetch still runs once.
  Ref<Buffer> a = buffer({16}, "A");
  Ref<Buffer> out = buffer({24}, "C");
  Ref<Buffer> s = buffer({4}, "S", DataType::float32(), "shared");
  Ref<Buffer> acc = buffer({1}, "acc", DataType::float32(), "local");
  Ref<Var> vy = make_var("vy"), vx = make_var("vx"), tx = make_var("tx"), k0 = make_var("k0");
  Expr v = vy * c(3) + vx;
  Stmt step = seq(
      {buffer_store(s, buffer_load(a, {k0 * c(4) + tx}), {tx}),
       buffer_store(acc, buffer_load(acc, {c(0)}) + buffer_load(s, {floormod(v, c(4))}), {c(0)})});
  Stmt body =
      make<Allocate>(acc, seq({buffer_store(acc, f32(0), {c(0)}), loop(k0, 4, step),
                               buffer_store(out, buffer_load(acc, {c(0)}), {v * c(4) + tx})}));
  Stmt nest = thread_loop(vy, 2, "vthread.y",
                          thread_loop(vx, 3, "vthread.x", thread_loop(tx, 4, "threadIdx.x", body)));
  Ref<PrimFunc> after = inject_virtual_threads(
      make_func({a, out}, thread_loop(make_var("bx"), 1, "blockIdx.x", make<Allocate>(s, nest))));
  std::string text = to_script(after->body);
  EXPECT_EQ(text.find("vthread"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(T.allocate((6,), "float32", scope="local"))"), std::string::npos) << text;
  int fetches = 0;
  post_order_visit(after->body, [&](const Node* node) {
    fetches += node->kind() == NodeKind::BufferStore &&
               static_cast<const BufferStore*>(node)->buffer->data.same_as(s->data);
  });
  EXPECT_EQ(fetches, 1) << text;
  EXPECT_NE(text.find("for k0 in range(4):\n"), std::string::npos) << text;
}

TEST(InjectVirtualThreads, WithoutVirtualThreadsTheFunctionIsReturnedAsItIs) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Var> tx = make_var("tx");
  Ref<PrimFunc> f = make_func(
      {a}, thread_loop(tx, 8, "threadIdx.x", buffer_store(a, buffer_load(a, {tx}) * f32(2), {tx})));
  EXPECT_TRUE(inject_virtual_threads(f).same_as(f));
}

TEST(InjectVirtualThreads, ASymbolicExtentIsAnError) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Var> n = make_var("n"), v = make_var("v");
  auto loop_of_n =
      make<For>(v, c(0), n, ForKind::kThreadBinding, buffer_store(a, f32(1), {floormod(v, c(8))}));
  loop_of_n->thread_tag = "vthread.x";
  auto f = make_func({a}, loop_of_n);
  f->params.push_back(n);
  EXPECT_EQ(error_of([&] { inject_virtual_threads(f); }),
            "inject_virtual_threads: loop v is bound to vthread.x with the minimum 0 and the "
            "extent n; virtual threads need a constant extent from 0");
}

}  // namespace
}  // namespace kiln::tir::testing
