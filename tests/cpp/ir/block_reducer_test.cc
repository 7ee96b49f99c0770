// Tests of match_block_reducer: a sum is one value, argmax's (index, value) two, each combined
// by a select that compares them; blocks whose combiner is not recognized say why; combine and
// store_together rebuild an update from the reducer.
#include "kiln/ir/block_reducer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "sample_funcs.h"

namespace kiln::ir {
namespace {

using samples::range;

const Block& first_block(const Ref<PrimFunc>& f) {
  const Block* found = nullptr;
  post_order_visit(f->body, [&](const Node* node) {
    if (node->kind() == NodeKind::Block && found == nullptr) {
      found = static_cast<const Block*>(node);
    }
  });
  return *found;
}

// An argmax over A[vk] for vk < 16 as te.create_prim_func writes it: the index and the value
// each selected by the same comparison, bound to LetStmts, then stored. `change` may edit the
// pieces before the block is built.
struct Argmax {
  Ref<Buffer> a = decl_buffer({int32_const(16)}, DataType::float32(), "A");
  Ref<Buffer> idx = decl_buffer({}, DataType::int32(), "idx");
  Ref<Buffer> val = decl_buffer({}, DataType::float32(), "val");
  Ref<Var> vk = make_var("vk");
  Expr x0 = buffer_load(idx, {}), x1 = buffer_load(val, {});
  Expr y0 = Expr(vk), y1 = buffer_load(a, {vk});
  Expr condition = logical_or(gt(y1, x1), logical_and(eq(y1, x1), lt(y0, x0)));
  Expr index_value = select(condition, y0, x0);
  Expr value_value = select(condition, y1, x1);
  Expr index_init = int32_const(std::numeric_limits<int32_t>::max());
  Expr value_init = make_const(DataType::float32(), -std::numeric_limits<double>::infinity());

  Ref<Block> block() const {
    auto b = make<Block>();
    b->name = "argmax";
    b->iter_vars = {IterVar{vk, range(0, 16), IterType::kCommReduce}};
    b->init = seq({buffer_store(idx, index_init, {}), buffer_store(val, value_init, {})});
    Ref<Var> t0 = make_var("idx_temp"), t1 = make_var("val_temp", DataType::float32());
    Stmt stores = seq({buffer_store(idx, t0, {}), buffer_store(val, t1, {})});
    b->body = make<LetStmt>(t0, index_value, make<LetStmt>(t1, value_value, stores));
    return b;
  }
};

TEST(MatchBlockReducer, ASumIsOneValueCombinedByAdd) {
  ReducerMismatch mismatch;
  std::optional<BlockReducer> r = match_block_reducer(first_block(samples::matmul(8)), &mismatch);
  ASSERT_TRUE(r.has_value()) << mismatch.why;
  ASSERT_EQ(r->buffers.size(), 1u);
  EXPECT_EQ(r->buffers[0]->name, "C");
  EXPECT_EQ(to_script(r->values[0]), "A[vi, vk] * B[vk, vj]");
  const CommReducer& c = *r->combiner;
  EXPECT_TRUE(structural_equal(c.result[0], c.lhs[0] + c.rhs[0]));
  EXPECT_TRUE(structural_equal(c.identity[0], make_zero(DataType::float32())));
}

TEST(MatchBlockReducer, ArgmaxIsAnIndexAndAValueSelectedTogether) {
  Argmax argmax;
  ReducerMismatch mismatch;
  std::optional<BlockReducer> r = match_block_reducer(*argmax.block(), &mismatch);
  ASSERT_TRUE(r.has_value()) << mismatch.why;
  ASSERT_EQ(r->buffers.size(), 2u);
  EXPECT_TRUE(r->buffers[0].same_as(argmax.idx) && r->buffers[1].same_as(argmax.val));
  EXPECT_TRUE(r->indices.empty());
  EXPECT_TRUE(structural_equal(r->values[0], argmax.y0));
  EXPECT_TRUE(structural_equal(r->values[1], argmax.y1));
  // The combiner is the update over variables: x for the stored values, y for the new ones.
  const CommReducer& c = *r->combiner;
  Expr x0 = c.lhs[0], x1 = c.lhs[1], y0 = c.rhs[0], y1 = c.rhs[1];
  Expr condition = logical_or(gt(y1, x1), logical_and(eq(y1, x1), lt(y0, x0)));
  EXPECT_TRUE(structural_equal(c.result[0], select(condition, y0, x0)));
  EXPECT_TRUE(structural_equal(c.result[1], select(condition, y1, x1)));
  EXPECT_TRUE(structural_equal(c.identity[0], argmax.index_init));
  EXPECT_TRUE(std::isinf(c.identity[1].as<FloatImm>()->value));
}

TEST(MatchBlockReducer, CombineAndStoreTogetherRebuildTheUpdate) {
  Argmax argmax;
  Ref<Block> block = argmax.block();
  ReducerMismatch mismatch;
  BlockReducer r = *match_block_reducer(*block, &mismatch);
  std::vector<Expr> places = elements_of(r.buffers, r.indices);
  Stmt update = store_together(places, combine(*r.combiner, places, r.values));
  EXPECT_TRUE(structural_equal(update, block->body, /*map_free_vars=*/true)) << to_script(update);
  // One value: a single store, no LetStmt.
  Stmt one = store_together({places[1]}, {r.values[1]});
  EXPECT_EQ(to_script(one), "val[()] = A[vk]");
  EXPECT_EQ(to_script(store_each(places, r.combiner->identity)), to_script(block->init));
}

TEST(MatchBlockReducer, ATupleUpdateThatIsNotASelectOrACombinerIsUnknown) {
  Argmax argmax;
  argmax.index_value = argmax.x0 - argmax.y0;
  ReducerMismatch mismatch;
  EXPECT_FALSE(match_block_reducer(*argmax.block(), &mismatch).has_value());
  EXPECT_EQ(mismatch.kind, ReducerMismatch::kUnknownCombiner);
  EXPECT_EQ(mismatch.why,
            "the value idx[()] - vk of idx[()] in block 'argmax' is not a select, sum, product, "
            "max or min with the stored element as exactly one operand");
}

TEST(MatchBlockReducer, ATupleConditionOnAnythingButTheValuesIsUnknown) {
  // A load of another buffer: partial results combine where it is not read.
  Argmax argmax;
  Ref<Buffer> mask = decl_buffer({int32_const(1)}, DataType::float32(), "mask");
  argmax.condition = logical_and(
      argmax.condition, gt(buffer_load(mask, {int32_const(0)}), make_zero(DataType::float32())));
  argmax.index_value = select(argmax.condition, argmax.y0, argmax.x0);
  argmax.value_value = select(argmax.condition, argmax.y1, argmax.x1);
  ReducerMismatch mismatch;
  EXPECT_FALSE(match_block_reducer(*argmax.block(), &mismatch).has_value());
  EXPECT_EQ(mismatch.kind, ReducerMismatch::kUnknownCombiner);
  EXPECT_NE(mismatch.why.find("in block 'argmax' depends on more than the stored values and the "
                              "values it combines"),
            std::string::npos)
      << mismatch.why;
}

TEST(MatchBlockReducer, ATupleInitThatIsNotAConstantIsNoReduction) {
  Argmax argmax;
  argmax.value_init = buffer_load(argmax.a, {int32_const(0)});
  ReducerMismatch mismatch;
  EXPECT_FALSE(match_block_reducer(*argmax.block(), &mismatch).has_value());
  EXPECT_EQ(mismatch.kind, ReducerMismatch::kNotReduction);
  EXPECT_NE(mismatch.why.find("its init val[()] = A[0] is not a constant"), std::string::npos)
      << mismatch.why;
}

TEST(MatchBlockReducer, ASumFromAnotherInitIsUnknown) {
  Ref<PrimFunc> f = samples::matmul(8);
  auto block = copy(&first_block(f));
  const auto* init = block->init.as<BufferStore>();
  block->init = buffer_store(init->buffer, make_one(DataType::float32()), init->indices);
  ReducerMismatch mismatch;
  EXPECT_FALSE(match_block_reducer(*block, &mismatch).has_value());
  EXPECT_EQ(mismatch.kind, ReducerMismatch::kUnknownCombiner);
  EXPECT_EQ(mismatch.why,
            "block 'C' combines with sum but its init value T.float32(1) is not the identity "
            "T.float32(0) of sum");
}

}  // namespace
}  // namespace kiln::ir
