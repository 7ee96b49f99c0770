// Tests of the visitor and mutator: dispatch reaches every node, and an unchanged mutation
// returns the same node.
#include <gtest/gtest.h>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"

namespace kiln::ir {
namespace {

Stmt sample_loop(Ref<Var>* i_out, Ref<Buffer>* b_out) {
  Ref<Var> i = make_var("i");
  Ref<Buffer> b = decl_buffer({int32_const(16)}, DataType::float32(), "B");
  Stmt store = buffer_store(b, cast(DataType::float32(), i * 2 + 1), {i});
  *i_out = i;
  *b_out = b;
  return make<For>(i, int32_const(0), int32_const(16), ForKind::kSerial, store);
}

TEST(IRMutator, ReturnsTheSameNodeWhenNothingChanged) {
  Ref<Var> i;
  Ref<Buffer> b;
  Stmt loop = sample_loop(&i, &b);
  IRMutator identity;
  EXPECT_TRUE(identity.mutate(loop).same_as(loop));
}

TEST(Substitute, ReplacesVariablesAndRebuildsOnlyThePath) {
  Ref<Var> i;
  Ref<Buffer> b;
  Stmt loop = sample_loop(&i, &b);
  Ref<Var> j = make_var("j");
  Stmt out = substitute(loop, VarMap{{i.get(), Expr(j)}});
  EXPECT_FALSE(out.same_as(loop));
  EXPECT_TRUE(uses_var(out, [&](const Var* v) { return v == j.get(); }));
}

TEST(PostOrderVisit, VisitsChildrenFirst) {
  Expr e = make_var("a") + make_var("b") * 3;
  std::vector<NodeKind> kinds;
  post_order_visit(e, [&](const Node* n) { kinds.push_back(n->kind()); });
  ASSERT_EQ(kinds.size(), 5u);
  EXPECT_EQ(kinds.back(), NodeKind::Add);
  EXPECT_EQ(kinds[3], NodeKind::Mul);
}

TEST(Seq, FlattensNestedSequences) {
  Stmt a = make<Evaluate>(int32_const(1));
  Stmt b = make<Evaluate>(int32_const(2));
  Stmt s = seq({seq({a, b}), nullptr, a});
  const auto* sq = s.as<SeqStmt>();
  ASSERT_NE(sq, nullptr);
  EXPECT_EQ(sq->seq.size(), 3u);
  EXPECT_TRUE(seq({a}).same_as(a));
}

}  // namespace
}  // namespace kiln::ir
