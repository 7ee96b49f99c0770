// Tests of interval sets: construction, eval_set over each node kind (exact for affine
// expressions and splits, symbolic ends), union/intersection/subset, eval_region, error
// messages, and a fuzz test that every value of random expressions lies in their set.
#include <gtest/gtest.h>

#include <random>

#include "kiln/arith/int_set.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "tests/cpp/arith/index_eval.h"

namespace kiln::arith {
namespace {

using namespace ir;

// Builders with a literal right operand, for brevity.
Expr floordiv(const Expr& a, int64_t b) {
  return ir::floordiv(a, literal_like(b, a));
}
Expr floormod(const Expr& a, int64_t b) {
  return ir::floormod(a, literal_like(b, a));
}
Expr truncdiv(const Expr& a, int64_t b) {
  return ir::truncdiv(a, literal_like(b, a));
}
Expr truncmod(const Expr& a, int64_t b) {
  return ir::truncmod(a, literal_like(b, a));
}
Expr lt(const Expr& a, int64_t b) {
  return ir::lt(a, literal_like(b, a));
}
Expr ge(const Expr& a, int64_t b) {
  return ir::ge(a, literal_like(b, a));
}

Range range(int64_t min, int64_t extent) {
  return Range{int32_const(min), int32_const(extent)};
}

IntSet interval(int64_t lo, int64_t hi) {
  return IntSet::interval(int32_const(lo), int32_const(hi));
}

// The set's ends as constants; fails the test when an end is not constant.
void expect_constant_set(const IntSet& set, int64_t lo, int64_t hi) {
  ASSERT_TRUE(set.has_lower_bound() && set.has_upper_bound()) << set;
  const int64_t* a = as_const_int(set.min());
  const int64_t* b = as_const_int(set.max());
  ASSERT_TRUE(a != nullptr && b != nullptr) << set;
  EXPECT_EQ(*a, lo) << set;
  EXPECT_EQ(*b, hi) << set;
}

void expect_range(const Range& r, int64_t min, int64_t extent) {
  const int64_t* a = as_const_int(r.min);
  const int64_t* b = as_const_int(r.extent);
  ASSERT_TRUE(a != nullptr && b != nullptr) << r.min << ", " << r.extent;
  EXPECT_EQ(*a, min);
  EXPECT_EQ(*b, extent);
}

TEST(IntSet, Construction) {
  Analyzer ana;
  EXPECT_TRUE(IntSet::everything().is_everything());
  EXPECT_TRUE(IntSet::nothing().is_nothing());
  EXPECT_FALSE(IntSet::nothing().is_everything());
  Ref<Var> n = make_var("n");
  IntSet point = IntSet::single_point(n * 2);
  EXPECT_TRUE(point.is_single_point());
  expect_constant_set(IntSet::from_range(range(3, 5)), 3, 7);
  EXPECT_TRUE(IntSet::from_range(range(3, 1)).is_single_point());
  IntSet half = IntSet::from_bound(ConstIntBound{0, ConstIntBound::kPosInf}, DataType::int32());
  EXPECT_TRUE(half.has_lower_bound());
  EXPECT_FALSE(half.has_upper_bound());
  EXPECT_TRUE(IntSet::from_bound(ConstIntBound{2, 1}, DataType::int32()).is_nothing());
  expect_range(interval(4, 11).cover_range(&ana), 4, 8);
  expect_range(IntSet::nothing().cover_range(&ana), 0, 0);
  Range symbolic = IntSet::interval(n, n + 7).cover_range(&ana);
  EXPECT_TRUE(is_const_int(symbolic.extent, 8)) << symbolic.extent;
}

TEST(IntSet, CoverRangeOfUnboundedSetIsAnError) {
  Analyzer ana;
  IntSet half = IntSet::interval(int32_const(0), Expr());
  try {
    half.cover_range(&ana);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("[0, +inf] is unbounded"), std::string::npos) << e.what();
  }
  expect_range(half.cover_range(range(0, 16), &ana), 0, 16);
}

TEST(EvalSet, AffineIndexIsExact) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j");
  IntSetMap dom{{i.get(), IntSet::from_range(range(0, 8))},
                {j.get(), IntSet::from_range(range(0, 4))}};
  expect_constant_set(eval_set(i * 4 + j, dom, &ana), 0, 31);
  expect_constant_set(eval_set(i - j, dom, &ana), -3, 7);
  expect_constant_set(eval_set(i * -2 + 1, dom, &ana), -13, 1);
  expect_constant_set(eval_set(int32_const(5), dom, &ana), 5, 5);
}

TEST(EvalSet, SplitsAreTight) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  IntSetMap dom{{x.get(), IntSet::from_range(range(0, 32))}};
  expect_constant_set(eval_set(floordiv(x, 4), dom, &ana), 0, 7);
  expect_constant_set(eval_set(floormod(x, 4), dom, &ana), 0, 3);
  expect_constant_set(eval_set(truncdiv(x, 4), dom, &ana), 0, 7);
  expect_constant_set(eval_set(truncmod(x, 8), dom, &ana), 0, 7);
  // Within one period the remainder keeps its order.
  IntSetMap part{{x.get(), IntSet::from_range(range(9, 3))}};
  expect_constant_set(eval_set(floormod(x, 8), part, &ana), 1, 3);
  IntSetMap negative{{x.get(), IntSet::from_range(range(-8, 16))}};
  expect_constant_set(eval_set(floordiv(x, 4), negative, &ana), -2, 1);
}

TEST(EvalSet, SymbolicEnds) {
  Analyzer ana;
  Ref<Var> io = make_var("io"), x = make_var("x"), n = make_size_var("n");
  IntSetMap dom{{x.get(), IntSet::interval(io * 32, io * 32 + 31)}};
  IntSet quarter = eval_set(floordiv(x, 4), dom, &ana);
  EXPECT_TRUE(ana.can_prove_equal(quarter.min(), io * 8)) << quarter;
  EXPECT_TRUE(ana.can_prove_equal(quarter.max(), io * 8 + 7)) << quarter;
  expect_constant_set(eval_set(floormod(x, 4), dom, &ana), 0, 3);
  // Variables outside the domain are fixed symbols.
  Ref<Var> i = make_var("i");
  IntSetMap loop{{i.get(), IntSet::from_range(Range{int32_const(0), n})}};
  IntSet shifted = eval_set(i + n, loop, &ana);
  EXPECT_TRUE(ana.can_prove_equal(shifted.min(), n)) << shifted;
  EXPECT_TRUE(ana.can_prove_equal(shifted.max(), n * 2 - 1)) << shifted;
  IntSet point = eval_set(n * 3, loop, &ana);
  EXPECT_TRUE(point.is_single_point());
  // A symbolic positive multiplier keeps the order.
  IntSet scaled = eval_set(i * n, IntSetMap{{i.get(), IntSet::from_range(range(0, 4))}}, &ana);
  EXPECT_TRUE(is_const_int(scaled.min(), 0)) << scaled;
  EXPECT_TRUE(ana.can_prove_equal(scaled.max(), n * 3)) << scaled;
}

TEST(EvalSet, MinMaxSelectCastLet) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j"), t = make_var("t");
  IntSetMap dom{{i.get(), IntSet::from_range(range(0, 8))},
                {j.get(), IntSet::from_range(range(2, 4))}};
  expect_constant_set(eval_set(min(i, j), dom, &ana), 0, 5);
  expect_constant_set(eval_set(max(i, j), dom, &ana), 2, 7);
  expect_constant_set(eval_set(select(lt(i, 4), i + 10, j - 10), dom, &ana), -8, 17);
  IntSet wide = eval_set(cast(DataType::int64(), i * 2), dom, &ana);
  expect_constant_set(wide, 0, 14);
  EXPECT_EQ(wide.min()->dtype, DataType::int64());
  expect_constant_set(eval_set(let(t, i * 2, t + j), dom, &ana), 2, 19);
}

TEST(EvalSet, VectorsCoverEveryLane) {
  Analyzer ana;
  Ref<Var> i = make_var("i");
  IntSetMap dom{{i.get(), IntSet::from_range(range(0, 8))}};
  expect_constant_set(eval_set(ramp(i * 4, int32_const(1), 4), dom, &ana), 0, 31);
  expect_constant_set(eval_set(ramp(i, int32_const(-2), 4), dom, &ana), -6, 7);
  expect_constant_set(eval_set(broadcast(i + 1, 8), dom, &ana), 1, 8);
}

TEST(EvalSet, ProductsAndFallback) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j");
  IntSetMap dom{{i.get(), IntSet::from_range(range(-2, 6))},
                {j.get(), IntSet::from_range(range(-1, 6))}};
  expect_constant_set(eval_set(i * j, dom, &ana), -8, 12);
  IntSetMap positive{{i.get(), IntSet::from_range(range(1, 4))},
                     {j.get(), IntSet::from_range(range(2, 3))}};
  expect_constant_set(eval_set(i * j, positive, &ana), 2, 16);
  // A truncating division of a value of either sign falls back to constant bounds.
  expect_constant_set(eval_set(truncdiv(i * 2 - 1, 2), dom, &ana), -2, 2);
  // Comparisons are bools: [0, 1].
  expect_constant_set(eval_set(lt(i, j), dom, &ana), 0, 1);
  // The analyzer's scope used for the fallback ends with the evaluation.
  EXPECT_FALSE(ana.can_prove(ge(i, -2)));
}

TEST(EvalSet, UnboundedAndEmptyDomains) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), k = make_var("k");
  IntSetMap dom{{i.get(), IntSet::interval(int32_const(0), Expr())}, {k.get(), IntSet::nothing()}};
  IntSet s = eval_set(i * 2 + 1, dom, &ana);
  EXPECT_TRUE(s.has_lower_bound());
  EXPECT_FALSE(s.has_upper_bound());
  EXPECT_TRUE(is_const_int(s.min(), 1));
  IntSet neg = eval_set(0 - i, dom, &ana);
  EXPECT_FALSE(neg.has_lower_bound());
  EXPECT_TRUE(is_const_int(neg.max(), 0));
  EXPECT_TRUE(eval_set(i + k, dom, &ana).is_nothing());
}

TEST(SetOperations, UnionIntersectSubset) {
  Analyzer ana;
  expect_constant_set(union_sets({interval(0, 3), interval(8, 9)}, &ana), 0, 9);
  expect_constant_set(union_sets({IntSet::nothing(), interval(2, 5)}, &ana), 2, 5);
  EXPECT_TRUE(union_sets({IntSet::nothing()}, &ana).is_nothing());
  EXPECT_FALSE(union_sets({interval(0, 3), IntSet::everything()}, &ana).has_upper_bound());
  expect_constant_set(intersect_sets({interval(0, 10), interval(5, 20)}, &ana), 5, 10);
  EXPECT_TRUE(intersect_sets({interval(0, 3), interval(5, 20)}, &ana).is_nothing());
  expect_constant_set(intersect_sets({interval(0, 10), IntSet::everything()}, &ana), 0, 10);
  EXPECT_TRUE(can_prove_subset(interval(2, 4), interval(0, 4), &ana));
  EXPECT_FALSE(can_prove_subset(interval(2, 5), interval(0, 4), &ana));
  EXPECT_TRUE(can_prove_subset(IntSet::nothing(), interval(0, 0), &ana));
  EXPECT_TRUE(can_prove_subset(interval(0, 4), IntSet::everything(), &ana));
  EXPECT_FALSE(can_prove_subset(IntSet::everything(), interval(0, 4), &ana));
  Ref<Var> n = make_size_var("n");
  EXPECT_TRUE(can_prove_subset(IntSet::interval(n, n + 3), IntSet::interval(n, n * 2 + 8), &ana));
}

TEST(EvalRegion, AffineAndSplitAccesses) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), j = make_var("j"), x = make_var("x");
  IntSetMap dom = int_set_map({{i.get(), range(0, 8)}, {j.get(), range(0, 4)}});
  std::vector<Range> region =
      eval_region(std::vector<Expr>{i * 4 + j, j, int32_const(3)}, dom, &ana);
  ASSERT_EQ(region.size(), 3u);
  expect_range(region[0], 0, 32);
  expect_range(region[1], 0, 4);
  expect_range(region[2], 3, 1);
  IntSetMap xs = int_set_map({{x.get(), range(0, 32)}});
  expect_range(eval_region(std::vector<Expr>{floordiv(x, 4)}, xs, &ana)[0], 0, 8);
  // Indices are simplified first, so a variable that cancels does not widen the range.
  expect_range(eval_region(std::vector<Expr>{i * 4 + j - i * 4}, dom, &ana)[0], 0, 4);
  // A BufferRegion-like range: [i*4, i*4 + 4) over i covers [0, 32).
  std::vector<Range> ranges{Range{i * 4, int32_const(4)}, Range{j, int32_const(1)}};
  std::vector<Range> covered = eval_region(ranges, dom, &ana);
  expect_range(covered[0], 0, 32);
  expect_range(covered[1], 0, 4);
}

TEST(EvalRegion, UnboundedDimensionUsesShapeOrFails) {
  Analyzer ana;
  Ref<Var> i = make_var("i"), k = make_var("k");
  IntSetMap dom{{i.get(), IntSet::from_range(range(0, 8))}, {k.get(), IntSet::everything()}};
  std::vector<Range> region = eval_region(std::vector<Expr>{i, k}, dom, &ana,
                                          std::vector<Expr>{int32_const(8), int32_const(16)});
  expect_range(region[1], 0, 16);
  try {
    eval_region(std::vector<Expr>{i, k}, dom, &ana);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 1 is unbounded over the loop domains"),
              std::string::npos)
        << e.what();
  }
}

// Every value of a random expression over small domains lies in its evaluated set.
TEST(EvalSetFuzz, ValuesLieInTheSet) {
  std::mt19937 rng(1234);
  Ref<Var> vars[3] = {make_var("a"), make_var("b"), make_var("c")};
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  std::function<Expr(int)> random_expr = [&](int depth) -> Expr {
    if (depth == 0 || pick(4) == 0) {
      return pick(3) == 0 ? int32_const(pick(9) - 4) : Expr(vars[pick(3)]);
    }
    Expr a = random_expr(depth - 1);
    switch (pick(9)) {
      case 0:
        return a + random_expr(depth - 1);
      case 1:
        return a - random_expr(depth - 1);
      case 2:
        return a * (pick(7) - 3);
      case 3:
        return a * random_expr(depth - 1);
      case 4:
        return floordiv(a, int32_const(pick(5) + 1));
      case 5:
        return floormod(a, int32_const(pick(5) + 1));
      case 6:
        return min(a, random_expr(depth - 1));
      case 7:
        return max(a, random_expr(depth - 1));
      default:
        return select(lt(a, random_expr(depth - 1)), a, random_expr(depth - 1));
    }
  };
  for (int iteration = 0; iteration < 400; ++iteration) {
    Analyzer ana;
    int64_t lo[3], ext[3];
    IntSetMap dom;
    for (int v = 0; v < 3; ++v) {
      lo[v] = pick(7) - 3;
      ext[v] = pick(4) + 1;
      dom[vars[v].get()] = IntSet::from_range(range(lo[v], ext[v]));
    }
    Expr e = random_expr(4);
    IntSet set = eval_set(e, dom, &ana);
    ASSERT_FALSE(set.is_nothing()) << to_script(e);
    const int64_t* smin = set.has_lower_bound() ? as_const_int(set.min()) : nullptr;
    const int64_t* smax = set.has_upper_bound() ? as_const_int(set.max()) : nullptr;
    ASSERT_TRUE(smin != nullptr && smax != nullptr) << to_script(e) << " -> " << set;
    for (int64_t a = lo[0]; a < lo[0] + ext[0]; ++a) {
      for (int64_t b = lo[1]; b < lo[1] + ext[1]; ++b) {
        for (int64_t c = lo[2]; c < lo[2] + ext[2]; ++c) {
          testing::IndexValues values{{vars[0].get(), a}, {vars[1].get(), b}, {vars[2].get(), c}};
          int64_t value = testing::eval_index(e, values);
          ASSERT_TRUE(*smin <= value && value <= *smax)
              << to_script(e) << " = " << value << " at a=" << a << ", b=" << b << ", c=" << c
              << " is outside " << set;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::arith
