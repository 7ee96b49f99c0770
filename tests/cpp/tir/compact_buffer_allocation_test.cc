// Tests of compact_buffer_allocation: tiles of a large intermediate shrink to one tile, partial
// uses shrink with an offset, results are kept, and buffers whose region cannot be bounded by a
// constant (or whose storage is used opaquely) are left alone.
#include "kiln/tir/compact_buffer_allocation.h"

#include <gtest/gtest.h>

#include "kiln/tir/lower_init_block.h"
#include "kiln/tir/plan_buffer_allocation.h"
#include "tir_test_util.h"

namespace kiln::tir::testing {
namespace {

// The buffers allocated anywhere in `func`, in order.
std::vector<Ref<Buffer>> allocated_buffers(const Ref<PrimFunc>& func) {
  std::vector<Ref<Buffer>> result;
  post_order_visit(func->body, [&](const Node* node) {
    if (node->kind() == NodeKind::Block) {
      for (const Ref<Buffer>& b : static_cast<const Block*>(node)->alloc_buffers) {
        result.push_back(b);
      }
    }
  });
  return result;
}

// Adds `region` to the reads or writes of the block of a BlockRealize built by block().
void add_region(const Stmt& realize, const BufferRegion& region, bool writes) {
  auto* block = const_cast<Block*>(realize.as<BlockRealize>()->block.get());
  (writes ? block->writes : block->reads).push_back(region);
}

TEST(CompactBufferAllocation, TileGolden) {
  Ref<PrimFunc> after =
      compact_buffer_allocation(plan_buffer_allocation(tiled_producer_consumer(8, 4)));
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    for i0, j0 in T.grid(2, 2):
        with T.block(""):
            T.reads()
            T.writes()
            tmp = T.alloc_buffer((4, 4), "float32")
            for i1, j1 in T.grid(4, 4):
                with T.block("T"):
                    vi = T.axis.spatial(8, i0 * 4 + i1)
                    vj = T.axis.spatial(8, j0 * 4 + j1)
                    T.reads()
                    T.writes()
                    tmp[vi - i0 * 4, vj - j0 * 4] = A[vi, vj] * T.float32(2)
            for i2, j2 in T.grid(4, 4):
                with T.block("B"):
                    vi_1 = T.axis.spatial(8, i0 * 4 + i2)
                    vj_1 = T.axis.spatial(8, j0 * 4 + j2)
                    T.reads()
                    T.writes()
                    B[vi_1, vj_1] = tmp[vi_1 - i0 * 4, vj_1 - j0 * 4] + T.float32(1))");
  EXPECT_TRUE(compact_buffer_allocation(after).same_as(after));
}

TEST(CompactBufferAllocation, LargeTemporaryBecomesOneTile) {
  Ref<PrimFunc> planned = plan_buffer_allocation(tiled_producer_consumer(1024, 32));
  Ref<PrimFunc> after = compact_buffer_allocation(planned);
  std::vector<Ref<Buffer>> buffers = allocated_buffers(after);
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(to_script_node(buffers[0]), R"(tmp: T.Buffer((32, 32), "float32"))");
}

TEST(CompactBufferAllocation, KeepsResults) {
  Ref<PrimFunc> tiled = plan_buffer_allocation(tiled_producer_consumer(64, 8));
  expect_same_results(tiled, compact_buffer_allocation(tiled));
  for (const Ref<PrimFunc>& f : {conv2d_func(), softmax_func(3, 5), layer_norm_func(3, 6)}) {
    Ref<PrimFunc> planned = plan_buffer_allocation(lower_init_block(f));
    expect_same_results(planned, compact_buffer_allocation(planned));
  }
}

// tmp[16] written and read only at [2, 10) becomes tmp[8]; the shift by 2 cancels the + 2 of
// the indices.
TEST(CompactBufferAllocation, PartialUseShrinksWithAnOffset) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Buffer> b = buffer({8}, "B");
  Ref<Buffer> t = buffer({16}, "tmp");
  Ref<Var> i = make_var("i"), j = make_var("j"), vi = make_var("vi"), vj = make_var("vj");
  Stmt produce =
      loop(i, 8, block("T", {iter(vi, 8)}, {i}, buffer_store(t, buffer_load(a, {vi}), {vi + 2})));
  Stmt consume =
      loop(j, 8, block("B", {iter(vj, 8)}, {j}, buffer_store(b, buffer_load(t, {vj + 2}), {vj})));
  Ref<PrimFunc> before = make_func({a, b}, root(seq({produce, consume}), {t}));
  Ref<PrimFunc> after = compact_buffer_allocation(before);
  EXPECT_EQ(to_script(after->body), R"(with T.block("root"):
    T.reads()
    T.writes()
    tmp = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("T"):
            vi = T.axis.remap("S", [i])
            T.reads()
            T.writes()
            tmp[vi] = A[vi]
    for j in range(8):
        with T.block("B"):
            vj = T.axis.remap("S", [j])
            T.reads()
            T.writes()
            B[vj] = tmp[vj])");
  expect_same_results(before, after);
}

// Blocks that reach a whole 16x4 tile through one flat 64-lane ramp in row 0 (as a tensorized
// body does) declare the tile in their regions, which the compaction honours.
TEST(CompactBufferAllocation, BlockRegionsCountAsAccesses) {
  Ref<Buffer> a = buffer({64}, "A");
  Ref<Buffer> b = buffer({64}, "B");
  Ref<Buffer> t = buffer({32, 4}, "tmp");
  Expr lanes = ramp(c(0), c(1), 64);
  BufferRegion tile{t, {Range{c(0), c(16)}, Range{c(0), c(4)}}};
  Stmt produce = block("P", {}, {}, buffer_store(t, buffer_load(a, {lanes}), {c(0), lanes}));
  Stmt consume = block("C", {}, {}, buffer_store(b, buffer_load(t, {c(0), lanes}), {lanes}));
  add_region(produce, tile, /*writes=*/true);
  add_region(consume, tile, /*writes=*/false);
  Ref<PrimFunc> before = make_func({a, b}, root(seq({produce, consume}), {t}));
  Ref<PrimFunc> after = compact_buffer_allocation(before);
  std::vector<Ref<Buffer>> buffers = allocated_buffers(after);
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(to_script_node(buffers[0]), R"(tmp: T.Buffer((16, 4), "float32"))");
  expect_same_results(before, after);
}

TEST(CompactBufferAllocation, SymbolicExtentIsKept) {
  Ref<PrimFunc> f = symbolic_elementwise_func();
  EXPECT_TRUE(compact_buffer_allocation(f).same_as(f));
}

// Tiles of 8 over a symbolic length n (the last one cut by a predicate): the intermediate of n
// elements becomes one of 8.
TEST(CompactBufferAllocation, SymbolicLengthInTilesBecomesOneTile) {
  Ref<Var> n = make_size_var("n");
  Ref<Buffer> a = decl_buffer({n}, DataType::float32(), "A");
  Ref<Buffer> b = decl_buffer({n}, DataType::float32(), "B");
  Ref<Buffer> t = decl_buffer({n}, DataType::float32(), "tmp");
  Ref<Var> i0 = make_var("i0"), i1 = make_var("i1"), i2 = make_var("i2");
  Ref<Var> vt = make_var("vt"), vb = make_var("vb");
  IterVar it{vt, Range{c(0), n}, IterType::kDataPar};
  IterVar ib{vb, Range{c(0), n}, IterType::kDataPar};
  Stmt produce =
      loop(i1, 8,
           block("T", {it}, {i0 * 8 + i1}, buffer_store(t, buffer_load(a, {vt}) * f32(2), {vt}), {},
                 nullptr, lt(i0 * 8 + i1, n)));
  Stmt consume =
      loop(i2, 8,
           block("B", {ib}, {i0 * 8 + i2}, buffer_store(b, buffer_load(t, {vb}) + f32(1), {vb}), {},
                 nullptr, lt(i0 * 8 + i2, n)));
  Stmt tiles =
      make<For>(i0, c(0), floordiv(n + 7, c(8)), ForKind::kSerial, seq({produce, consume}));
  Ref<PrimFunc> before = make_func({a, b}, root(tiles, {t}));
  Ref<PrimFunc> after = compact_buffer_allocation(plan_buffer_allocation(before));
  std::vector<Ref<Buffer>> buffers = allocated_buffers(after);
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_EQ(to_script_node(buffers[0]), R"(tmp: T.Buffer((8,), "float32"))");
  for (int64_t size : {1, 8, 21}) expect_same_results(before, after, {{"n", size}});
}

TEST(CompactBufferAllocation, FullyUsedBuffersAreUnchanged) {
  Ref<PrimFunc> f = lower_init_block(softmax_func(4, 4));
  EXPECT_TRUE(compact_buffer_allocation(f).same_as(f));
}

// A buffer whose data variable is passed to a call may be read anywhere by the callee.
TEST(CompactBufferAllocation, OpaqueUseIsKept) {
  Ref<Buffer> a = buffer({8}, "A");
  Ref<Buffer> t = buffer({16}, "tmp");
  Ref<Var> i = make_var("i"), vi = make_var("vi");
  Stmt produce =
      loop(i, 4, block("T", {iter(vi, 4)}, {i}, buffer_store(t, buffer_load(a, {vi}), {vi})));
  Stmt use = make<Evaluate>(
      call(DataType::int32(), Builtin::CallExtern, {make<StringImm>("consume"), t->data}));
  Ref<PrimFunc> f = make_func({a}, root(seq({produce, use}), {t}));
  EXPECT_TRUE(compact_buffer_allocation(f).same_as(f));
}

}  // namespace
}  // namespace kiln::tir::testing
