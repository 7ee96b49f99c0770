// Tests of the statement simplifier: loop ranges, branch conditions, lets and asserts are known
// while simplifying the statements under them, and an unchanged statement comes back as the
// same node.
#include <gtest/gtest.h>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"

namespace kiln::arith {
namespace {

using namespace ir;

Expr c32(int64_t v) {
  return int32_const(v);
}

Stmt loop(const Ref<Var>& v, int64_t extent, Stmt body) {
  return make<For>(v, c32(0), c32(extent), ForKind::kSerial, std::move(body));
}

class StmtSimplify : public ::testing::Test {
 protected:
  void expect_simplifies_to(const Stmt& input, const Stmt& expected) {
    Analyzer ana;
    Stmt out = ana.simplify(input);
    EXPECT_TRUE(structural_equal(out, expected)) << "input:\n"
                                                 << input << "\nexpected:\n"
                                                 << expected << "\ngot:\n"
                                                 << out;
  }

  Ref<Buffer> a = decl_buffer({c32(64)}, DataType::float32(), "A");
  Ref<Var> i = make_var("i"), j = make_var("j"), n = make_size_var("n");
  Expr one = make_const(DataType::float32(), 1.0);
};

TEST_F(StmtSimplify, UnchangedStatementIsTheSameNode) {
  Stmt body = buffer_store(a, one, {i * 4 + j});
  Stmt s = loop(i, 16, loop(j, 4, body));
  Analyzer ana;
  EXPECT_TRUE(ana.simplify(s).same_as(s));
}

TEST_F(StmtSimplify, LoopRangesSimplifyIndices) {
  Stmt s = loop(
      i, 16,
      loop(j, 4,
           buffer_store(a, one, {floordiv(i * 4 + j, c32(4)) * 4 + floormod(i * 4 + j, c32(4))})));
  Stmt expected = loop(i, 16, loop(j, 4, buffer_store(a, one, {i * 4 + j})));
  expect_simplifies_to(s, expected);
}

TEST_F(StmtSimplify, LoopVariableBoundsEndWithTheLoop) {
  // Inside the loop j < 4 decides the condition; after it, j is a free variable again.
  Stmt inside = make<IfThenElse>(lt(j, c32(4)), buffer_store(a, one, {j}));
  Stmt after = make<IfThenElse>(lt(j, c32(4)), buffer_store(a, one, {j}));
  Stmt s = seq({loop(j, 4, inside), after});
  Stmt expected = seq({loop(j, 4, buffer_store(a, one, {j})), after});
  expect_simplifies_to(s, expected);
}

TEST_F(StmtSimplify, BranchesKnowTheirCondition) {
  Stmt then_case = buffer_store(a, one, {min(i, n)});
  Stmt else_case = buffer_store(a, one, {min(i, n)});
  Stmt s = loop(i, 64, make<IfThenElse>(lt(i, n), then_case, else_case));
  Stmt expected = loop(
      i, 64,
      make<IfThenElse>(lt(i, n), buffer_store(a, one, {Expr(i)}), buffer_store(a, one, {Expr(n)})));
  expect_simplifies_to(s, expected);
}

TEST_F(StmtSimplify, DecidedConditionsPickTheirBranch) {
  Stmt taken = buffer_store(a, one, {i});
  Stmt dropped = buffer_store(a, one, {i + 1});
  expect_simplifies_to(loop(i, 8, make<IfThenElse>(lt(i, c32(8)), taken, dropped)),
                       loop(i, 8, taken));
  expect_simplifies_to(loop(i, 8, make<IfThenElse>(ge(i, c32(8)), taken, dropped)),
                       loop(i, 8, dropped));
  expect_simplifies_to(loop(i, 8, make<IfThenElse>(ge(i, c32(8)), taken)),
                       loop(i, 8, make<Evaluate>(c32(0))));
}

TEST_F(StmtSimplify, LetValuesAreKnown) {
  Ref<Var> v = make_var("v");
  // A constant is substituted and the let disappears.
  expect_simplifies_to(make<LetStmt>(v, c32(3), buffer_store(a, one, {v + 1})),
                       buffer_store(a, one, {c32(4)}));
  // Another value stays bound, and its bounds are known: v = i*2 is in [0, 14].
  Stmt body = make<IfThenElse>(lt(v, c32(16)), buffer_store(a, one, {v}));
  expect_simplifies_to(loop(i, 8, make<LetStmt>(v, i * 2, body)),
                       loop(i, 8, make<LetStmt>(v, i * 2, buffer_store(a, one, {Expr(v)}))));
}

TEST_F(StmtSimplify, AssertedConditionsHoldAfterTheAssert) {
  Stmt body = buffer_store(a, one, {min(n, c32(64))});
  Stmt s = make<AssertStmt>(le(n, c32(64)), "n is too large", body);
  expect_simplifies_to(
      s, make<AssertStmt>(le(n, c32(64)), "n is too large", buffer_store(a, one, {Expr(n)})));
}

TEST_F(StmtSimplify, BlockIteratorsAndPredicates) {
  Ref<Var> vi = make_var("vi");
  auto block = make<Block>();
  block->name = "B";
  block->iter_vars = {IterVar{vi, Range{c32(0), c32(16)}, IterType::kDataPar}};
  block->body = buffer_store(a, one, {floormod(vi, c32(16)) + min(i, n)});
  Stmt realize = make<BlockRealize>(std::vector<Expr>{i}, lt(i, n), block);
  Stmt s = loop(i, 32, realize);

  auto expected_block = make<Block>();
  expected_block->name = "B";
  expected_block->iter_vars = block->iter_vars;
  expected_block->body = buffer_store(a, one, {vi + i});
  Stmt expected = loop(i, 32, make<BlockRealize>(std::vector<Expr>{i}, lt(i, n), expected_block));
  expect_simplifies_to(s, expected);
}

}  // namespace
}  // namespace kiln::arith
