// Tests of flatten_buffers: row-major and strided offsets, vector indices, allocations, the
// parameter buffers kept in buffer_map, int64 offsets for huge buffers, results kept, blocks
// refused, and the unchanged case.
#include "kiln/tir/flatten_buffers.h"

#include <gtest/gtest.h>

#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_opaque_block.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

Ref<PrimFunc> lower_blocks(const Ref<PrimFunc>& f) {
  return lower_opaque_block(lower_init_block(f));
}

TEST(FlattenBuffers, RowMajorGolden) {
  Ref<Buffer> a = buffer({4, 8}, "A");
  Ref<Buffer> b = buffer({4, 8}, "B");
  Ref<Buffer> t = buffer({2, 8}, "tmp");
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt body = seq({buffer_store(t, buffer_load(a, {i, j}), {c(1), j}),
                   buffer_store(b, buffer_load(t, {c(1), j}), {i, j})});
  Ref<PrimFunc> before = make_func({a, b}, make<Allocate>(t, loop(i, 4, loop(j, 8, body))));
  Ref<PrimFunc> after = flatten_buffers(before);
  EXPECT_EQ(to_script(after), R"(# from kiln.script import tir as T
@T.prim_func
def main(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    T.func_attr({"global_symbol": "main"})
    with T.allocate((16,), "float32") as tmp:
        for i, j in T.grid(4, 8):
            tmp[8 + j] = A_1[i * 8 + j]
            B_1[i * 8 + j] = tmp[8 + j])");
  ASSERT_EQ(after->buffer_map.size(), 2u);
  EXPECT_TRUE(after->buffer_map[0].second.same_as(a));
  EXPECT_TRUE(after->buffer_map[1].second.same_as(b));
  expect_same_results(before, after);
}

TEST(FlattenBuffers, RampInTheLastDimensionStaysARamp) {
  Ref<Buffer> a = buffer({4, 16}, "A");
  Ref<Var> i = make_var("i"), j = make_var("j");
  Expr lanes = ramp(j * 8, c(1), 8);
  Stmt store = buffer_store(a, buffer_load(a, {i, lanes}) + broadcast(f32(1), 8), {i, lanes});
  Ref<PrimFunc> before = make_func({a}, loop(i, 4, loop(j, 2, store)));
  Ref<PrimFunc> after = flatten_buffers(before);
  EXPECT_EQ(to_script(after->body), R"(for i, j in T.grid(4, 2):
    A[T.Ramp(i * 16 + j * 8, 1, 8)] = A[T.Ramp(i * 16 + j * 8, 1, 8)] + T.Broadcast(T.float32(1), 8))");
  expect_same_results(before, after);
}

TEST(FlattenBuffers, StridesAndOffsetGolden) {
  Ref<Buffer> a = buffer({4, 8}, "A");
  a->strides = {c(16), c(1)};
  a->elem_offset = make_size_var("offset");
  Ref<Buffer> b = buffer({4, 8}, "B");
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt store = buffer_store(b, buffer_load(a, {i, j}), {i, j});
  Ref<PrimFunc> after = flatten_buffers(make_func({a, b}, loop(i, 4, loop(j, 8, store))));
  EXPECT_EQ(to_script(after->body), R"(for i, j in T.grid(4, 8):
    B[i * 8 + j] = A[i * 16 + j * 1 + offset])");
}

TEST(FlattenBuffers, HugeBuffersUseInt64Offsets) {
  Ref<Buffer> a = buffer({65536, 65536}, "A", DataType::int_(8));
  Ref<Var> i = make_var("i"), j = make_var("j");
  Stmt store = buffer_store(a, make_const(DataType::int_(8), 1), {i, j});
  Ref<PrimFunc> after = flatten_buffers(make_func({a}, loop(i, 2, loop(j, 2, store))));
  const auto* outer = after->body.as<For>();
  const auto* flat_store = outer->body.as<For>()->body.as<BufferStore>();
  ASSERT_NE(flat_store, nullptr);
  ASSERT_EQ(flat_store->indices.size(), 1u);
  EXPECT_EQ(flat_store->indices[0]->dtype, DataType::int64());
  EXPECT_EQ(to_script(flat_store->buffer->shape[0]), "T.int64(4294967296)");
}

TEST(FlattenBuffers, KeepsResults) {
  for (const Ref<PrimFunc>& f : {matmul_func(5, 4, 3), conv2d_func(), softmax_func(3, 5),
                                 layer_norm_func(3, 6), tiled_producer_consumer(16, 4)}) {
    Ref<PrimFunc> lowered = lower_blocks(f);
    expect_same_results(f, flatten_buffers(lowered));
  }
  Ref<PrimFunc> symbolic = lower_blocks(symbolic_elementwise_func());
  expect_same_results(symbolic, flatten_buffers(symbolic), {{"n", 9}});
}

TEST(FlattenBuffers, RefusesBlocks) {
  std::string message = error_of([] { flatten_buffers(symbolic_elementwise_func()); });
  EXPECT_NE(message.find("flatten_buffers: block \"root\" is still present; run "
                         "lower_opaque_block first"),
            std::string::npos)
      << message;
}

TEST(FlattenBuffers, FlatFunctionIsUnchanged) {
  Ref<PrimFunc> f = flatten_buffers(lower_blocks(matmul_func(2, 3, 4)));
  EXPECT_TRUE(flatten_buffers(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
