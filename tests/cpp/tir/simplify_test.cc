// Tests of the simplify pass: golden IR, results kept, and the unchanged case.
#include "kiln/tir/simplify.h"

#include <gtest/gtest.h>

#include "kiln/tir/flatten_buffers.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_opaque_block.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

Ref<PrimFunc> simple_example() {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Buffer> b = buffer({8}, "B");
  Ref<Var> i = make_var("i");
  Stmt store = buffer_store(b, buffer_load(a, {floordiv(i * 8, c(8))}), {i + c(0)});
  return make_func({a, b}, loop(i, 8, make<IfThenElse>(lt(i, c(10)), store)));
}

TEST(Simplify, Golden) {
  Ref<PrimFunc> after = simplify(simple_example());
  EXPECT_EQ(to_script(after->body), R"(for i in range(8):
    B[i] = A[i])");
}

TEST(Simplify, RemovesStatementsWithoutEffect) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt never = loop(i, 4, make<IfThenElse>(gt(i, c(10)), buffer_store(a, f32(2), {i})));
  Stmt empty = loop(j, 4, make<Evaluate>(c(0)));
  Ref<PrimFunc> before = make_func({a}, seq({never, buffer_store(a, f32(1), {c(0)}), empty}));
  Ref<PrimFunc> after = simplify(before);
  EXPECT_EQ(to_script(after->body), "A[0] = T.float32(1)");
  expect_same_results(before, after);
}

TEST(Simplify, KeepsResults) {
  Ref<PrimFunc> example = simple_example();
  expect_same_results(example, simplify(example));
  for (const Ref<PrimFunc>& f : {matmul_func(5, 4, 3), conv2d_func(), softmax_func(3, 5),
                                 layer_norm_func(3, 6), tiled_producer_consumer(16, 4)}) {
    Ref<PrimFunc> flat = flatten_buffers(lower_opaque_block(lower_init_block(f)));
    expect_same_results(f, simplify(flat));
  }
}

TEST(Simplify, SimpleFunctionIsUnchanged) {
  Ref<PrimFunc> f = simplify(simple_example());
  EXPECT_TRUE(simplify(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
