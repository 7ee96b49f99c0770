// Tests of the Analyzer's facts and proofs: binding variables (and the errors for conflicting
// bindings), scoped constraints that tighten bounds and disappear at the end of their scope,
// and the can_prove family.
#include <gtest/gtest.h>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::arith {
namespace {

using namespace ir;

Expr c32(int64_t v) {
  return int32_const(v);
}

Range range(int64_t min, int64_t extent) {
  return Range{c32(min), c32(extent)};
}

// The message of the kiln::Error that `f` throws (empty when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConstraintScope, TightensABoundInsideAndRestoresItAfter) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ana.bind(x, range(0, 100));
  {
    ConstraintScope scope(&ana, lt(x, c32(10)));
    EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{0, 9}));
    {
      ConstraintScope inner(&ana, ge(x, c32(3)));
      EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{3, 9}));
      EXPECT_TRUE(ana.can_prove(lt(x * 2, c32(19))));
    }
    EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{0, 9}));
    EXPECT_FALSE(ana.can_prove(ge(x, c32(3))));
  }
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{0, 99}));
  EXPECT_FALSE(ana.can_prove(lt(x, c32(10))));
}

TEST(ConstraintScope, SymbolicConditionsAndConjunctions) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), n = make_size_var("n"), m = make_size_var("m");
  {
    auto scope = ana.enter_constraint(logical_and(lt(i, n), le(n, m)));
    EXPECT_TRUE(ana.can_prove(lt(i, n + 1)));
    EXPECT_TRUE(ana.can_prove(le(i + 1, n)));
    EXPECT_TRUE(ana.can_prove(le(n, m)));
    EXPECT_TRUE(ana.can_prove_less(i - n, 0));
    EXPECT_EQ(ana.simplify(min(i, n)), Expr(i));
    EXPECT_FALSE(ana.can_prove(lt(i, m - 1)));
  }
  EXPECT_FALSE(ana.can_prove(lt(i, n)));
  EXPECT_TRUE(structural_equal(ana.simplify(min(i, n)), min(i, n)));
}

TEST(ConstraintScope, ConditionsThatAreNotArithmetic) {
  Analyzer ana;
  Ref<Var> b = make_var("b", DataType::bool_()), x = make_var("x"), y = make_var("y");
  {
    ConstraintScope scope(&ana, b);
    EXPECT_TRUE(ana.can_prove(b));
    EXPECT_TRUE(structural_equal(ana.simplify(select(b, x, y)), x));
  }
  {
    ConstraintScope scope(&ana, ne(x, y));
    EXPECT_TRUE(ana.can_prove(ne(x, y)));
    EXPECT_FALSE(ana.can_prove(eq(x, y)));
    EXPECT_TRUE(structural_equal(ana.simplify(eq(x, y)), bool_const(false)));
  }
  {
    ConstraintScope scope(&ana, call(Builtin::Likely, {lt(x, c32(4))}));
    EXPECT_TRUE(ana.can_prove(lt(x, c32(5))));
  }
  EXPECT_FALSE(ana.can_prove(b));
}

TEST(ConstraintScope, BindsARangeUntilItEnds) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j"), n = make_size_var("n");
  ana.bind(i, range(0, 8));
  {
    // A symbolic range: its conditions hold inside the scope only.
    auto loop = ana.enter_range(j, Range{i, n - i});
    EXPECT_TRUE(ana.can_prove(lt(j, n)));
    EXPECT_TRUE(ana.can_prove(ge(j, i)));
    {
      // Over what was known of i, until the inner scope ends.
      auto inner = ana.enter_range(i, range(2, 3));
      EXPECT_EQ(ana.const_int_bound(i), (ConstIntBound{2, 4}));
    }
    EXPECT_EQ(ana.const_int_bound(i), (ConstIntBound{0, 7}));
  }
  EXPECT_FALSE(ana.can_prove(lt(j, n)));
  EXPECT_FALSE(ana.can_prove(ge(j, i)));
  EXPECT_EQ(ana.const_int_bound(i), (ConstIntBound{0, 7}));
}

TEST(ConstraintScope, PinnedVariableBecomesAConstant) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ConstraintScope scope(&ana, eq(x, c32(3)));
  EXPECT_TRUE(structural_equal(ana.simplify(x * 2 + 1), c32(7)));
}

TEST(Analyzer, BindToAValueSubstitutes) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), v = make_var("v");
  ana.bind(v, x * 4);
  EXPECT_TRUE(structural_equal(ana.simplify(floordiv(v + 3, c32(4))), Expr(x)));
  EXPECT_TRUE(ana.can_prove_equal(floormod(v, c32(2)), c32(0)));
}

TEST(Analyzer, BindRangeOfExtentOneBindsTheMinimum) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ana.bind(x, range(5, 1));
  EXPECT_TRUE(structural_equal(ana.simplify(x + 1), c32(6)));
}

TEST(Analyzer, BindRangeBoundsTheVariableByTheEndOfItsRange) {
  // A loop from a = r // 32 to a + (1 - a + r // 64) (a part that loop_partition splits off)
  // ends at r // 64 + 1: the variable is at most r // 64, though a and the extent each reach
  // further.
  Analyzer ana;
  Ref<Var> r = make_var("r"), v = make_var("v");
  ana.bind(r, range(0, 64));
  Expr start = floordiv(r, c32(32));
  ana.bind(v, Range{start, c32(1) - start + floordiv(r, c32(64))});
  ConstIntBound bound = ana.const_int_bound(v);
  EXPECT_EQ(bound.min_value, 0);
  EXPECT_EQ(bound.max_value, 0);
}

TEST(Analyzer, RebindingWithDifferentInformationIsAnError) {
  Analyzer ana;
  Ref<Var> i = make_var("i");
  ana.bind(i, range(0, 8));
  ana.bind(i, range(0, 8));  // the same range again is fine
  EXPECT_EQ(error_of([&] { ana.bind(i, range(0, 16)); }),
            "Analyzer::bind: variable i is already bound; pass allow_override to bind it again");
  ana.bind(i, range(0, 16), true);
  EXPECT_EQ(ana.const_int_bound(i), (ConstIntBound{0, 15}));
}

TEST(Analyzer, BindingAValueOfAnotherDtypeIsATypeError) {
  Analyzer ana;
  Ref<Var> i = make_var("i");
  try {
    ana.bind(i, make_const(DataType::int64(), int64_t{3}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kType);
    EXPECT_STREQ(e.what(),
                 "Analyzer::bind: variable i has dtype int32 but the value it is bound to has "
                 "dtype int64");
  }
}

TEST(Analyzer, BindingAVariableToItselfIsAnError) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  EXPECT_EQ(error_of([&] { ana.bind(x, x + 1); }),
            "Analyzer::bind: variable x cannot be bound to a value that uses it (x + 1)");
  ana.bind(y, x * 2);
  EXPECT_EQ(error_of([&] { ana.bind(x, y + 1); }),
            "Analyzer::bind: variable x cannot be bound to a value that uses it (x * 2 + 1)");
}

TEST(Analyzer, UpdateIntersectsOrOverrides) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ana.update(x, ConstIntBound{0, 100});
  ana.update(x, ConstIntBound{-5, 10});
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{0, 10}));
  ana.update(x, ConstIntBound{-5, 10}, true);
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{-5, 10}));
  EXPECT_EQ(error_of([&] {
              ana.update(x, ConstIntBound{20, 30});
            }),
            "Analyzer::update: the bound [20, 30] of variable x contradicts the known bound "
            "[-5, 10]");
}

TEST(Analyzer, CanProveFamily) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j"), x = make_var("x");
  ana.bind(i, range(0, 8));
  ana.bind(j, range(0, 4));
  EXPECT_TRUE(ana.can_prove_greater_equal(i * 4 + j, 0));
  EXPECT_FALSE(ana.can_prove_greater_equal(i * 4 + j, 1));
  EXPECT_TRUE(ana.can_prove_less(i * 4 + j, 32));
  EXPECT_FALSE(ana.can_prove_less(i * 4 + j, 31));
  EXPECT_TRUE(ana.can_prove_equal(floordiv(i * 4 + j, c32(4)), i));
  EXPECT_TRUE(ana.can_prove_equal(x * 2 + x, x * 3));
  EXPECT_FALSE(ana.can_prove_equal(x, x + 1));
  EXPECT_TRUE(ana.can_prove(logical_or(lt(x, c32(5)), ge(x, c32(5)))));
  // Not proved is not disproved: x < 5 is unknown.
  EXPECT_FALSE(ana.can_prove(lt(x, c32(5))));
  EXPECT_FALSE(ana.can_prove(ge(x, c32(5))));
  // A bound beyond the dtype's range.
  EXPECT_TRUE(ana.can_prove_greater_equal(x, INT64_MIN));
  EXPECT_FALSE(ana.can_prove_less(x, INT64_MIN + 1));
}

TEST(Analyzer, SimplifyReturnsTheSameNodeWhenNothingChanges) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  Expr e = floordiv(x, c32(4)) + y * 3;
  EXPECT_TRUE(ana.simplify(e).same_as(e));
  EXPECT_TRUE(ana.rewrite_simplify(e).same_as(e));
  EXPECT_TRUE(ana.canonical_simplify(e).same_as(e));
  Expr c = logical_and(lt(x, y), ne(y, c32(0)));
  EXPECT_TRUE(ana.simplify(c).same_as(c));
}

}  // namespace
}  // namespace kiln::arith
