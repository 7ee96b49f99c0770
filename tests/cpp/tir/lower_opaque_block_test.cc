// Tests of lower_opaque_block: iterators substituted, predicates become conditions,
// alloc_buffers become Allocates, loops keep their kind and thread binding, results are kept,
// and a block that still has an init is refused.
#include "kiln/tir/lower_opaque_block.h"

#include <gtest/gtest.h>

#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

TEST(LowerOpaqueBlock, PredicateAndAllocationGolden) {
  Ref<Buffer> a = buffer({30}, "A");
  Ref<Buffer> b = buffer({30}, "B");
  Ref<Buffer> t = buffer({1}, "tmp");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  Stmt body = seq({buffer_store(t, buffer_load(a, {vi}) * f32(2), {c(0)}),
                   buffer_store(b, buffer_load(t, {c(0)}), {vi})});
  Stmt nest =
      loop(i, 16, block("B", {iter(vi, 30)}, {i * 2}, body, {t}, nullptr, lt(i * 2, c(30))));
  Ref<PrimFunc> before = make_func({a, b}, root(nest));
  Ref<PrimFunc> after = lower_opaque_block(before);
  EXPECT_EQ(to_script(after->body), R"(for i in range(16):
    if i * 2 < 30:
        with T.allocate((1,), "float32") as tmp:
            tmp[0] = A[i * 2] * T.float32(2)
            B[i * 2] = tmp[0])");
  expect_same_results(before, after);
}

TEST(LowerOpaqueBlock, KeepsThreadBindingAndAnnotations) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Var> bx = make_var("bx"), i = make_var("i"), vi = make_var("vi");
  auto inner = make<For>(i, c(0), c(4), ForKind::kUnrolled,
                         block("A", {iter(vi, 8)}, {bx * 4 + i}, buffer_store(a, f32(1), {vi})));
  inner->annotations["pragma_unroll_explicit"] = int32_const(1);
  Ref<PrimFunc> before = make_func({a}, root(thread_loop(bx, 2, "blockIdx.x", inner)));
  Ref<PrimFunc> after = lower_opaque_block(before);
  EXPECT_EQ(to_script(after->body), R"(for bx in T.thread_binding(2, thread="blockIdx.x"):
    for i in T.unroll(4, annotations={"pragma_unroll_explicit": 1}):
        A[bx * 4 + i] = T.float32(1))");
}

TEST(LowerOpaqueBlock, KeepsResults) {
  for (const Ref<PrimFunc>& f : {matmul_func(5, 4, 3), conv2d_func(), softmax_func(3, 5),
                                 layer_norm_func(3, 6), tiled_producer_consumer(16, 4)}) {
    Ref<PrimFunc> prepared = compact_buffer_allocation(plan_buffer_allocation(lower_init_block(f)));
    expect_same_results(f, lower_opaque_block(prepared));
  }
  Ref<PrimFunc> symbolic = symbolic_elementwise_func();
  expect_same_results(symbolic, lower_opaque_block(symbolic), {{"n", 9}});
}

TEST(LowerOpaqueBlock, RefusesABlockWithInit) {
  std::string message = error_of([] { lower_opaque_block(matmul_func(2, 2, 2)); });
  EXPECT_NE(message.find("lower_opaque_block: block \"C\" still has an init; run "
                         "lower_init_block first"),
            std::string::npos)
      << message;
}

TEST(LowerOpaqueBlock, WithoutBlocksReturnsTheSameFunction) {
  Ref<PrimFunc> f = lower_opaque_block(symbolic_elementwise_func());
  EXPECT_TRUE(lower_opaque_block(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
