// Structure tests of te::create_prim_func: loops, block iterators and their kinds, read/write
// regions, reduction init and update, intermediate buffers, and its errors.
#include "kiln/te/create_prim_func.h"

#include <gtest/gtest.h>

#include <functional>

#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "kiln/te/reduction.h"

namespace kiln::te {
namespace {

using namespace kiln::ir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Expr c(int64_t v) {
  return int32_const(v);
}

// The block of the root block's i-th loop nest.
const Block* block_at(const Ref<PrimFunc>& func, size_t index, std::vector<const For*>* loops) {
  const auto* root = func->body.as<BlockRealize>();
  Stmt body = root->block->body;
  Stmt nest = body;
  if (const auto* s = body.as<SeqStmt>()) nest = s->seq.at(index);
  while (const auto* loop = nest.as<For>()) {
    if (loops != nullptr) loops->push_back(loop);
    nest = loop->body;
  }
  const auto* realize = nest.as<BlockRealize>();
  return realize == nullptr ? nullptr : realize->block.get();
}

struct Matmul {
  Tensor a, b, c;
};

Matmul matmul() {
  Tensor a = placeholder({c(16), c(32)}, DataType::float32(), "A");
  Tensor b = placeholder({c(32), c(8)}, DataType::float32(), "B");
  IterVar k = reduce_axis(Range{c(0), c(32)}, "k");
  Tensor out = compute(
      {c(16), c(8)},
      [&](const std::vector<Ref<Var>>& v) {
        return sum(a({v[0], k.var}) * b({k.var, v[1]}), {k});
      },
      "C");
  return {a, b, out};
}

TEST(CreatePrimFunc, MapsEachTensorParamToItsOwnBuffer) {
  Matmul m = matmul();
  Ref<PrimFunc> func = create_prim_func({m.a, m.b, m.c});
  ASSERT_EQ(func->params.size(), 3u);
  EXPECT_TRUE(func->buffer_of(func->params[0]).same_as(m.a.buffer()));
  EXPECT_TRUE(func->buffer_of(func->params[2]).same_as(m.c.buffer()));
  const auto* root = func->body.as<BlockRealize>();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->block->name, "root");
  EXPECT_TRUE(root->block->alloc_buffers.empty());
}

TEST(CreatePrimFunc, MatmulBlockHasSpatialAndReduceIterators) {
  Matmul m = matmul();
  Ref<PrimFunc> func = create_prim_func({m.a, m.b, m.c});
  std::vector<const For*> loops;
  const Block* block = block_at(func, 0, &loops);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->name, "C");
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(loops[0]->loop_var->name, "i");
  EXPECT_EQ(loops[2]->loop_var->name, "k");
  EXPECT_TRUE(is_const_int(loops[2]->extent, 32));
  ASSERT_EQ(block->iter_vars.size(), 3u);
  EXPECT_EQ(block->iter_vars[0].type, IterType::kDataPar);
  EXPECT_EQ(block->iter_vars[1].type, IterType::kDataPar);
  EXPECT_EQ(block->iter_vars[2].type, IterType::kCommReduce);
  EXPECT_EQ(block->iter_vars[2].var->name, "v_k");
}

TEST(CreatePrimFunc, MatmulRegionsArePointsOverBlockIterators) {
  Matmul m = matmul();
  Ref<PrimFunc> func = create_prim_func({m.a, m.b, m.c});
  const Block* block = block_at(func, 0, nullptr);
  ASSERT_EQ(block->reads.size(), 2u);
  EXPECT_TRUE(block->reads[0].buffer.same_as(m.a.buffer()));
  EXPECT_TRUE(block->reads[1].buffer.same_as(m.b.buffer()));
  const Var* vi = block->iter_vars[0].var.get();
  const Var* vk = block->iter_vars[2].var.get();
  EXPECT_EQ(block->reads[0].region[0].min.get(), vi);
  EXPECT_EQ(block->reads[0].region[1].min.get(), vk);
  EXPECT_TRUE(is_const_int(block->reads[0].region[1].extent, 1));
  ASSERT_EQ(block->writes.size(), 1u);
  EXPECT_TRUE(block->writes[0].buffer.same_as(m.c.buffer()));
}

TEST(CreatePrimFunc, ReductionHasInitAndUpdate) {
  Matmul m = matmul();
  Ref<PrimFunc> func = create_prim_func({m.a, m.b, m.c});
  const Block* block = block_at(func, 0, nullptr);
  const auto* init = block->init.as<BufferStore>();
  ASSERT_NE(init, nullptr);
  EXPECT_TRUE(init->buffer.same_as(m.c.buffer()));
  EXPECT_TRUE(init->value.is<FloatImm>());
  const auto* update = block->body.as<BufferStore>();
  ASSERT_NE(update, nullptr);
  const auto* add = update->value.as<Add>();
  ASSERT_NE(add, nullptr);
  const auto* self = add->a.as<BufferLoad>();
  ASSERT_NE(self, nullptr);
  EXPECT_TRUE(self->buffer.same_as(m.c.buffer()));
  EXPECT_TRUE(add->b.is<Mul>());
}

TEST(CreatePrimFunc, AccessesAtConstantOffsetsShareOneRegion) {
  Tensor a = placeholder({c(10)}, DataType::float32(), "A");
  Tensor b = compute(
      {c(8)},
      [&](const std::vector<Ref<Var>>& v) { return a({v[0] + 2}) + a({v[0] - 1}) + a({v[0]}); },
      "B");
  Ref<PrimFunc> func = create_prim_func({a, b});
  const Block* block = block_at(func, 0, nullptr);
  ASSERT_EQ(block->reads.size(), 1u);
  const Range& r = block->reads[0].region[0];
  const auto* start = r.min.as<Sub>();
  ASSERT_NE(start, nullptr);
  EXPECT_TRUE(start->a.same_as(Expr(block->iter_vars[0].var)));
  EXPECT_TRUE(is_const_int(start->b, 1));
  EXPECT_TRUE(is_const_int(r.extent, 4));
}

TEST(CreatePrimFunc, OtherRepeatedAccessesAreCoveredByMinAndMax) {
  Tensor a = placeholder({c(16)}, DataType::float32(), "A");
  Tensor b = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}) + a({v[0] * 2}); }, "B");
  Ref<PrimFunc> func = create_prim_func({a, b});
  const Range& r = block_at(func, 0, nullptr)->reads[0].region[0];
  EXPECT_TRUE(r.min.is<Min>());
  EXPECT_TRUE(r.extent.is<Sub>());
}

TEST(CreatePrimFunc, IntermediateTensorsAreAllocatedInTheRoot) {
  Tensor a = placeholder({c(8)}, DataType::float32(), "A");
  Tensor t = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}) * 2; }, "T");
  Tensor b = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return t({v[0]}) + 1; }, "B");
  Ref<PrimFunc> func = create_prim_func({a, b});
  const auto* root = func->body.as<BlockRealize>()->block.get();
  ASSERT_EQ(root->alloc_buffers.size(), 1u);
  EXPECT_TRUE(root->alloc_buffers[0].same_as(t.buffer()));
  EXPECT_EQ(block_at(func, 0, nullptr)->name, "T");
  EXPECT_EQ(block_at(func, 1, nullptr)->name, "B");
}

TEST(CreatePrimFunc, WhereGuardsTheUpdate) {
  Tensor a = placeholder({c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  Tensor b = compute(
      {c(1)}, [&](const std::vector<Ref<Var>>& v) { return sum(a({k.var}), {k}, lt(k.var, c(4))); },
      "B");
  Ref<PrimFunc> func = create_prim_func({a, b});
  const Block* block = block_at(func, 0, nullptr);
  const auto* guard = block->body.as<IfThenElse>();
  ASSERT_NE(guard, nullptr);
  EXPECT_TRUE(guard->then_case.is<BufferStore>());
  EXPECT_FALSE(guard->else_case.defined());
}

TEST(CreatePrimFunc, TupleReductionStoresEveryComponent) {
  Tensor a = placeholder({c(4), c(8)}, DataType::float32(), "A");
  IterVar k = reduce_axis(Range{c(0), c(8)}, "k");
  Ref<Var> x0 = make_var("x0"), y0 = make_var("y0");
  Ref<Var> x1 = make_var("x1", DataType::float32()), y1 = make_var("y1", DataType::float32());
  Expr keep = ge(x1, y1);
  Ref<CommReducer> argmax =
      make_comm_reducer({x0, x1}, {y0, y1}, {select(keep, x0, y0), select(keep, x1, y1)},
                        {c(-1), min_value(DataType::float32())}, "te.comm_reducer");
  std::vector<IterVar> axis = compute_axes({c(4)}, {"i"}, "te.compute", "argmax");
  Expr i = axis[0].var;
  std::vector<Expr> body = comm_reduce(argmax, {k.var, a({i, k.var})}, {k}, nullptr, {}, "argmax");
  std::vector<Tensor> outs = compute_from_body(axis, body, "argmax");
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].name(), "argmax_v0");
  EXPECT_EQ(outs[1].dtype(), DataType::float32());
  Ref<PrimFunc> func = create_prim_func({a, outs[0], outs[1]});
  const Block* block = block_at(func, 0, nullptr);
  EXPECT_EQ(block->writes.size(), 2u);
  const auto* s = block->init.as<SeqStmt>();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->seq.size(), 2u);
  const auto* let0 = block->body.as<LetStmt>();
  ASSERT_NE(let0, nullptr);
  const auto* let1 = let0->body.as<LetStmt>();
  ASSERT_NE(let1, nullptr);
  const auto* stores = let1->body.as<SeqStmt>();
  ASSERT_NE(stores, nullptr);
  EXPECT_EQ(stores->seq.size(), 2u);
}

TEST(CreatePrimFunc, SymbolicDimensionsAreBoundByBufferShapes) {
  Ref<Var> n = make_size_var("n");
  Tensor a = placeholder({n}, DataType::float32(), "A");
  Tensor b = compute(
      {n}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}) + 1.0; }, "B");
  Ref<PrimFunc> func = create_prim_func({a, b});
  EXPECT_EQ(func->params.size(), 2u);
  std::vector<const For*> loops;
  block_at(func, 0, &loops);
  EXPECT_TRUE(loops[0]->extent.same_as(Expr(n)));
}

TEST(CreatePrimFunc, RejectsAMissingInput) {
  Matmul m = matmul();
  std::string msg = error_of([&] { create_prim_func({m.a, m.c}); });
  EXPECT_NE(msg.find("te.create_prim_func: tensor B is an input of compute C but is not in the "
                     "argument list"),
            std::string::npos)
      << msg;
}

TEST(CreatePrimFunc, RejectsAnUnboundVariable) {
  Tensor a = placeholder({c(8)}, DataType::float32(), "A");
  Ref<Var> alpha = make_var("alpha", DataType::float32());
  Tensor b = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}) * alpha; }, "B");
  std::string msg = error_of([&] { create_prim_func({a, b}); });
  EXPECT_NE(msg.find("te.create_prim_func: variable alpha used in compute B is not bound"),
            std::string::npos)
      << msg;
  Ref<PrimFunc> func = create_prim_func({a, b, alpha});
  EXPECT_EQ(func->params.size(), 3u);
  EXPECT_FALSE(func->buffer_of(func->params[2]).defined());
}

TEST(CreatePrimFunc, MakesRepeatedBlockNamesUnique) {
  Tensor a = placeholder({c(8)}, DataType::float32(), "A");
  Tensor t = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return a({v[0]}); }, "C");
  Tensor b = compute(
      {c(8)}, [&](const std::vector<Ref<Var>>& v) { return t({v[0]}); }, "C");
  Ref<PrimFunc> func = create_prim_func({a, b});
  EXPECT_EQ(block_at(func, 0, nullptr)->name, "C");
  EXPECT_EQ(block_at(func, 1, nullptr)->name, "C_1");
}

}  // namespace
}  // namespace kiln::te
