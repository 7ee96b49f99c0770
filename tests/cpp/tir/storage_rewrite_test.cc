// Tests of storage_rewrite: hoisting constant allocations out of serial loops (not parallel
// ones), storage shared by buffers with disjoint live ranges (not by overlapping, differently
// typed or larger ones), results kept, and the unchanged case.
#include "kiln/tir/storage_rewrite.h"

#include <gtest/gtest.h>

#include "kiln/tir/compact_buffer_allocation.h"
#include "kiln/tir/flatten_buffers.h"
#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/lower_opaque_block.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

// for i: allocate T[8]; T[j] = A[i * 8 + j]; B[i * 8 + j] = T[7 - j]
Ref<PrimFunc> allocation_in_loop(ForKind kind) {
  Ref<Buffer> a = buffer({32}, "A");
  Ref<Buffer> b = buffer({32}, "B");
  Ref<Buffer> t = buffer({8}, "tmp");
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k");
  Stmt fill = loop(j, 8, buffer_store(t, buffer_load(a, {i * 8 + j}), {j}));
  Stmt use = loop(k, 8, buffer_store(b, buffer_load(t, {7 - k}), {i * 8 + k}));
  return make_func({a, b}, loop(i, 4, make<Allocate>(t, seq({fill, use})), kind));
}

// A chain of three intermediates: T1 = A * 2, T2 = T1 + 1, T3 = T2 * 3, B = T3, with
// T3 of `t3_size` elements of `t3_dtype` (the others have 16 float32 elements).
Ref<PrimFunc> chain(int64_t t3_size, DataType t3_dtype) {
  Ref<Buffer> a = buffer({16}, "A");
  Ref<Buffer> b = buffer({16}, "B");
  Ref<Buffer> t1 = buffer({16}, "T1");
  Ref<Buffer> t2 = buffer({16}, "T2");
  Ref<Buffer> t3 = buffer({t3_size}, "T3", t3_dtype);
  Ref<Var> i0 = make_var("i"), i1 = make_var("i"), i2 = make_var("i"), i3 = make_var("i");
  Stmt body = seq({
      loop(i0, 16, buffer_store(t1, buffer_load(a, {i0}) * f32(2), {i0})),
      loop(i1, 16, buffer_store(t2, buffer_load(t1, {i1}) + f32(1), {i1})),
      loop(i2, 16, buffer_store(t3, cast(t3_dtype, buffer_load(t2, {i2}) * f32(3)), {i2})),
      loop(i3, 16, buffer_store(b, cast(DataType::float32(), buffer_load(t3, {i3})), {i3})),
  });
  return make_func({a, b}, make<Allocate>(t1, make<Allocate>(t2, make<Allocate>(t3, body))));
}

TEST(StorageRewrite, HoistsOutOfASerialLoopGolden) {
  Ref<PrimFunc> before = allocation_in_loop(ForKind::kSerial);
  Ref<PrimFunc> after = storage_rewrite(before);
  EXPECT_EQ(to_script(after->body), R"(with T.allocate((8,), "float32") as tmp:
    for i in range(4):
        for j in range(8):
            tmp[j] = A[i * 8 + j]
        for k in range(8):
            B[i * 8 + k] = tmp[7 - k])");
  expect_same_results(before, after);
}

TEST(StorageRewrite, ParallelLoopsKeepTheirAllocations) {
  Ref<PrimFunc> f = allocation_in_loop(ForKind::kParallel);
  EXPECT_TRUE(storage_rewrite(f).same_as(f));
}

// tmp has n elements whatever the iteration: it leaves the loop. per_i has i + 1: it stays.
TEST(StorageRewrite, HoistsOnlySizesThatDoNotDependOnTheLoop) {
  Ref<Var> n = make_size_var("n");
  Ref<Var> i = make_var("i"), j = make_var("j");
  Ref<Buffer> a = decl_buffer({n}, DataType::float32(), "A");
  Ref<Buffer> t = decl_buffer({n}, DataType::float32(), "tmp");
  Ref<Buffer> u = decl_buffer({i + 1}, DataType::float32(), "per_i");
  Stmt body = seq({loop(j, 2, buffer_store(t, buffer_load(a, {j}), {j})),
                   buffer_store(u, buffer_load(t, {c(1)}), {i}),
                   buffer_store(a, buffer_load(u, {i}), {c(0)})});
  Ref<PrimFunc> f = make_func({a}, loop(i, 4, make<Allocate>(t, make<Allocate>(u, body))));
  Ref<PrimFunc> after = storage_rewrite(f);
  EXPECT_EQ(to_script(after->body), R"(with T.allocate((n,), "float32") as tmp:
    for i in range(4):
        with T.allocate((i + 1,), "float32") as per_i:
            for j in range(2):
                tmp[j] = A[j]
            per_i[i] = tmp[1]
            A[0] = per_i[i])");
  expect_same_results(f, after, {{"n", 3}});
}

TEST(StorageRewrite, ReusesTheStorageOfADeadBufferGolden) {
  Ref<PrimFunc> before = chain(16, DataType::float32());
  Ref<PrimFunc> after = storage_rewrite(before);
  // T3 keeps its name but lives in T1's storage.
  std::map<std::string, const Var*> data_of;
  post_order_visit(after->body, [&](const Node* node) {
    if (node->kind() == NodeKind::BufferStore) {
      const Buffer& b = *static_cast<const BufferStore*>(node)->buffer;
      data_of[b.name] = b.data.get();
    }
  });
  EXPECT_EQ(data_of.at("T3"), data_of.at("T1"));
  EXPECT_NE(data_of.at("T2"), data_of.at("T1"));
  EXPECT_EQ(to_script(after->body), R"(with T.allocate((16,), "float32") as T1:
    with T.allocate((16,), "float32") as T2:
        for i in range(16):
            T1[i] = A[i] * T.float32(2)
        for i_1 in range(16):
            T2[i_1] = T1[i_1] + T.float32(1)
        for i_2 in range(16):
            T3[i_2] = T2[i_2] * T.float32(3)
        for i_3 in range(16):
            B[i_3] = T3[i_3])");
  expect_same_results(before, after);
}

// The chain inside a loop: storage is shared where each iteration allocates, then the two
// remaining allocations leave the loop.
TEST(StorageRewrite, ReusesInsideALoopThenHoists) {
  Ref<PrimFunc> chained = chain(16, DataType::float32());
  Ref<Var> r = make_var("r");
  Ref<PrimFunc> before = make_func({chained->buffer_map[0].second, chained->buffer_map[1].second},
                                   loop(r, 3, chained->body));
  Ref<PrimFunc> after = storage_rewrite(before);
  const auto* outer = after->body.as<Allocate>();
  ASSERT_NE(outer, nullptr) << to_script(after);
  const auto* inner = outer->body.as<Allocate>();
  ASSERT_NE(inner, nullptr) << to_script(after);
  EXPECT_EQ(outer->buffer->name, "T1");
  EXPECT_EQ(inner->buffer->name, "T2");
  EXPECT_TRUE(inner->body.is<For>()) << to_script(after);
  expect_same_results(before, after);
}

TEST(StorageRewrite, NoReuseAcrossDtypes) {
  Ref<PrimFunc> f = chain(16, DataType::int32());
  EXPECT_TRUE(storage_rewrite(f).same_as(f));
}

TEST(StorageRewrite, NoReuseOfASmallerBuffer) {
  Ref<PrimFunc> f = chain(32, DataType::float32());
  EXPECT_TRUE(storage_rewrite(f).same_as(f));
}

TEST(StorageRewrite, KeepsResults) {
  for (const Ref<PrimFunc>& f :
       {conv2d_func(), softmax_func(3, 5), layer_norm_func(3, 6), tiled_producer_consumer(16, 4)}) {
    Ref<PrimFunc> flat = flatten_buffers(
        lower_opaque_block(compact_buffer_allocation(plan_buffer_allocation(lower_init_block(f)))));
    expect_same_results(f, storage_rewrite(flat));
  }
}

TEST(StorageRewrite, WithoutAllocationsIsUnchanged) {
  Ref<PrimFunc> f = flatten_buffers(lower_opaque_block(lower_init_block(matmul_func(2, 2, 2))));
  EXPECT_TRUE(storage_rewrite(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
