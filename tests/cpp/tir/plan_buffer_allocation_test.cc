// Tests of plan_buffer_allocation: allocations move to the lowest common ancestor of their
// uses, but never into loops that carry values through the buffer or into GPU thread loops
// their scope forbids; results are kept; nothing moves when uses are spread.
#include "kiln/tir/plan_buffer_allocation.h"

#include <gtest/gtest.h>

#include "kiln/tir/lower_init_block.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

TEST(PlanBufferAllocation, MovesIntoTheTileLoopGolden) {
  Ref<PrimFunc> after = plan_buffer_allocation(tiled_producer_consumer(8, 4));
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for i0, j0 in T.grid(2, 2):
        with T.block(""):
            T.reads()
            T.writes()
            tmp = T.alloc_buffer((8, 8), "float32")
            for i1, j1 in T.grid(4, 4):
                with T.block("T"):
                    vi = T.axis.spatial(8, i0 * 4 + i1)
                    vj = T.axis.spatial(8, j0 * 4 + j1)
                    T.reads()
                    T.writes()
                    tmp[vi, vj] = A[vi, vj] * T.float32(2)
            for i2, j2 in T.grid(4, 4):
                with T.block("B"):
                    vi_1 = T.axis.spatial(8, i0 * 4 + i2)
                    vj_1 = T.axis.spatial(8, j0 * 4 + j2)
                    T.reads()
                    T.writes()
                    B[vi_1, vj_1] = tmp[vi_1, vj_1] + T.float32(1))");
  EXPECT_TRUE(plan_buffer_allocation(after).same_as(after));
}

TEST(PlanBufferAllocation, KeepsResults) {
  Ref<PrimFunc> tiled = tiled_producer_consumer(8, 4);
  expect_same_results(tiled, plan_buffer_allocation(tiled));
  for (const Ref<PrimFunc>& f : {conv2d_func(), softmax_func(3, 5), layer_norm_func(3, 6)}) {
    Ref<PrimFunc> init_lowered = lower_init_block(f);
    expect_same_results(init_lowered, plan_buffer_allocation(init_lowered));
  }
  Ref<PrimFunc> symbolic = symbolic_elementwise_func();
  expect_same_results(symbolic, plan_buffer_allocation(symbolic), {{"n", 7}});
}

TEST(PlanBufferAllocation, UsesInSeparateNestsStayAtTheRoot) {
  Ref<PrimFunc> f = lower_init_block(softmax_func(3, 5));
  EXPECT_TRUE(plan_buffer_allocation(f).same_as(f));
  Ref<PrimFunc> m = matmul_func(4, 4, 4);
  EXPECT_TRUE(plan_buffer_allocation(m).same_as(m));
}

// for k: T[0] accumulates A[k] (a reduction over k) and B[k] reads the running sum. Moving T
// into the k loop would restart the sum in every iteration.
TEST(PlanBufferAllocation, NeverMovesIntoALoopBoundToAReduction) {
  Ref<Buffer> a = buffer({6}, "A");
  Ref<Buffer> b = buffer({6}, "B");
  Ref<Buffer> t = buffer({1}, "tmp");
  Ref<Var> k = make_var("k"), vk = make_var("vk"), vb = make_var("vb");
  Stmt accumulate = block("T", {iter(vk, 6, IterType::kCommReduce)}, {k},
                          buffer_store(t, buffer_load(t, {c(0)}) + buffer_load(a, {vk}), {c(0)}),
                          {}, buffer_store(t, f32(0), {c(0)}));
  Stmt read = block("B", {iter(vb, 6)}, {k}, buffer_store(b, buffer_load(t, {c(0)}), {vb}));
  Ref<PrimFunc> f =
      lower_init_block(make_func({a, b}, root(loop(k, 6, seq({accumulate, read})), {t})));
  EXPECT_TRUE(plan_buffer_allocation(f).same_as(f));
}

// for k: S[0] = A[k] (a copy, spatial over k), then C[0] += S[0] (a reduction over k). The
// reduction accumulates into C, not S: S moves into the k loop.
TEST(PlanBufferAllocation, MovesIntoAReductionLoopThatOnlyReadsTheBuffer) {
  Ref<Buffer> a = buffer({6}, "A");
  Ref<Buffer> out = buffer({1}, "C");
  Ref<Buffer> s = buffer({1}, "S");
  Ref<Var> k = make_var("k"), vs = make_var("vs"), vk = make_var("vk");
  Stmt copy = block("S", {iter(vs, 6)}, {k}, buffer_store(s, buffer_load(a, {vs}), {c(0)}));
  Stmt accumulate =
      block("C", {iter(vk, 6, IterType::kCommReduce)}, {k},
            buffer_store(out, buffer_load(out, {c(0)}) + buffer_load(s, {c(0)}), {c(0)}), {},
            buffer_store(out, f32(0), {c(0)}));
  Ref<PrimFunc> f =
      lower_init_block(make_func({a, out}, root(loop(k, 6, seq({copy, accumulate})), {s})));
  Ref<PrimFunc> after = plan_buffer_allocation(f);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for k in range(6):
        with T.block(""):
            T.reads()
            T.writes()
            S = T.alloc_buffer((1,), "float32")
            with T.block("S"):
                vs = T.axis.remap("S", [k])
                T.reads()
                T.writes()
                S[0] = A[vs]
            with T.block("C"):
                vk = T.axis.remap("R", [k])
                T.reads()
                T.writes()
                if vk == 0:
                    C[0] = T.float32(0)
                C[0] = C[0] + S[0])");
  expect_same_results(f, after);
}

// Loops without a block between them and the access carry no block contract: values may flow
// from one iteration to the next.
TEST(PlanBufferAllocation, NeverMovesIntoALoopWithoutBlocks) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Buffer> t = buffer({1}, "tmp");
  Ref<Var> i = make_var("i");
  Stmt body = seq({buffer_store(a, buffer_load(t, {c(0)}), {i}),
                   buffer_store(t, buffer_load(a, {i}) + f32(1), {c(0)})});
  Ref<PrimFunc> f = make_func({a}, root(loop(i, 4, body), {t}));
  EXPECT_TRUE(plan_buffer_allocation(f).same_as(f));
}

// A "shared" buffer is per GPU thread block: it may go under blockIdx.x but not under
// threadIdx.x; a "local" one goes under threadIdx.x.
TEST(PlanBufferAllocation, RespectsGpuScopes) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Buffer> b = buffer({8}, "B");
  Ref<Buffer> s = buffer({8}, "S", DataType::float32(), "shared");
  Ref<Buffer> l = buffer({8}, "L", DataType::float32(), "local");
  Ref<Var> bx = make_var("bx"), tx = make_var("tx"), tx2 = make_var("tx2");
  Ref<Var> v1 = make_var("v1"), v2 = make_var("v2");
  Stmt load = thread_loop(tx, 4, "threadIdx.x",
                          block("S", {iter(v1, 8)}, {bx * 4 + tx},
                                seq({buffer_store(l, buffer_load(a, {v1}), {v1}),
                                     buffer_store(s, buffer_load(l, {v1}) * f32(2), {v1})})));
  Stmt store = thread_loop(
      tx2, 4, "threadIdx.x",
      block("B", {iter(v2, 8)}, {bx * 4 + tx2}, buffer_store(b, buffer_load(s, {v2}), {v2})));
  Ref<PrimFunc> f =
      make_func({a, b}, root(thread_loop(bx, 2, "blockIdx.x", seq({load, store})), {s, l}));
  Ref<PrimFunc> after = plan_buffer_allocation(f);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        with T.block(""):
            T.reads()
            T.writes()
            S = T.alloc_buffer((8,), "float32", scope="shared")
            for tx in T.thread_binding(4, thread="threadIdx.x"):
                with T.block("S"):
                    v1 = T.axis.spatial(8, bx * 4 + tx)
                    T.reads()
                    T.writes()
                    L = T.alloc_buffer((8,), "float32", scope="local")
                    L[v1] = A[v1]
                    S[v1] = L[v1] * T.float32(2)
            for tx2 in T.thread_binding(4, thread="threadIdx.x"):
                with T.block("B"):
                    v2 = T.axis.spatial(8, bx * 4 + tx2)
                    T.reads()
                    T.writes()
                    B[v2] = S[v2])");
  expect_same_results(f, after);
}

// A "shared" buffer goes under a blockIdx loop even without a block with iterators between
// them (the cross-thread reduction of a value, under a unit loop): each thread block has its
// own, so no value crosses that loop's iterations through it. It stays outside threadIdx.x.
TEST(PlanBufferAllocation, MovesSharedIntoABlockIdxLoopWithoutBlocks) {
  Ref<Buffer> a = buffer({4}, "A");
  Ref<Buffer> b = buffer({1}, "B");
  Ref<Buffer> s = buffer({4}, "S", DataType::float32(), "shared");
  Ref<Var> u = make_var("u"), tx = make_var("tx"), tx2 = make_var("tx2");
  Stmt load = thread_loop(tx, 4, "threadIdx.x", buffer_store(s, buffer_load(a, {tx}), {tx}));
  Stmt store = thread_loop(tx2, 4, "threadIdx.x", buffer_store(b, buffer_load(s, {c(3)}), {c(0)}));
  Ref<PrimFunc> f =
      make_func({a, b}, root(thread_loop(u, 1, "blockIdx.x", seq({load, store})), {s}));
  Ref<PrimFunc> after = plan_buffer_allocation(f);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for u in T.thread_binding(1, thread="blockIdx.x"):
        with T.block(""):
            T.reads()
            T.writes()
            S = T.alloc_buffer((4,), "float32", scope="shared")
            for tx in T.thread_binding(4, thread="threadIdx.x"):
                S[tx] = A[tx]
            for tx2 in T.thread_binding(4, thread="threadIdx.x"):
                B[0] = S[3])");
  expect_same_results(f, after);
}

}  // namespace
}  // namespace kiln::tir::testing
