// Tests of lower_init_block: golden IR, guards over several reduce iterators, blocks without
// reduce iterators, results kept on the interpreter, and the unchanged case.
#include "kiln/tir/lower_init_block.h"

#include <gtest/gtest.h>

#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

TEST(LowerInitBlock, MatmulGolden) {
  Ref<PrimFunc> after = lower_init_block(matmul_func(4, 3, 2));
  EXPECT_EQ(to_script(after), R"(# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 2), "float32"), B: T.Buffer((2, 3), "float32"), C: T.Buffer((4, 3), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i, j, k in T.grid(4, 3, 2):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            if v_k == 0:
                C[v_i, v_j] = T.float32(0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j])");
}

TEST(LowerInitBlock, GuardsEveryReduceIterator) {
  std::string text = to_script(lower_init_block(conv2d_func()));
  EXPECT_NE(text.find("if v_rc == 0 and v_ry == 0 and v_rx == 0:"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.init()"), std::string::npos) << text;
}

TEST(LowerInitBlock, InitWithoutReduceIteratorsRunsFirst) {
  Ref<Buffer> out = buffer({4}, "B");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  Stmt init = buffer_store(out, f32(0), {vi});
  Stmt update = buffer_store(out, buffer_load(out, {vi}) + f32(1), {vi});
  Ref<PrimFunc> before =
      make_func({out}, root(loop(i, 4, block("B", {iter(vi, 4)}, {i}, update, {}, init))));
  Ref<PrimFunc> after = lower_init_block(before);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for i in range(4):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.reads()
            T.writes()
            B[vi] = T.float32(0)
            B[vi] = B[vi] + T.float32(1))");
  expect_same_results(before, after);
}

TEST(LowerInitBlock, KeepsResults) {
  for (const Ref<PrimFunc>& f :
       {matmul_func(5, 4, 3), conv2d_func(), softmax_func(3, 5), layer_norm_func(3, 6)}) {
    expect_same_results(f, lower_init_block(f));
  }
}

TEST(LowerInitBlock, WithoutInitReturnsTheSameFunction) {
  Ref<PrimFunc> f = symbolic_elementwise_func();
  EXPECT_TRUE(lower_init_block(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
