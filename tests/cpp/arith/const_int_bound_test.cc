// Tests of Analyzer::const_int_bound: interval arithmetic over each expression kind, variable
// bounds from bind and size variables, and dtype limits.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"

namespace kiln::arith {
namespace {

using namespace ir;

Range range(int64_t min, int64_t extent) {
  return Range{int32_const(min), int32_const(extent)};
}

Expr c32(int64_t v) {
  return int32_const(v);
}

TEST(ConstIntBound, ConstantsAndUnboundVariables) {
  Analyzer ana;
  EXPECT_EQ(ana.const_int_bound(c32(7)), ConstIntBound::single(7));
  Ref<Var> x = make_var("x");
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{INT32_MIN, INT32_MAX}));
  Ref<Var> n = make_size_var("n");
  EXPECT_EQ(ana.const_int_bound(n), (ConstIntBound{0, INT32_MAX}));
  Ref<Var> w = make_var("w", DataType::int64());
  EXPECT_TRUE(ana.const_int_bound(w).is_everything());
  Ref<Var> b = make_var("b", DataType::uint(8));
  EXPECT_EQ(ana.const_int_bound(b), (ConstIntBound{0, 255}));
  Ref<Var> flag = make_var("flag", DataType::bool_());
  EXPECT_EQ(ana.const_int_bound(flag), (ConstIntBound{0, 1}));
  EXPECT_TRUE(ana.const_int_bound(make_var("f", DataType::float32())).is_everything());
}

TEST(ConstIntBound, ArithmeticOfBoundVariables) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  ana.bind(x, range(0, 8));
  ana.bind(y, range(-4, 8));
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{0, 7}));
  EXPECT_EQ(ana.const_int_bound(x + y), (ConstIntBound{-4, 10}));
  EXPECT_EQ(ana.const_int_bound(x - y), (ConstIntBound{-3, 11}));
  EXPECT_EQ(ana.const_int_bound(x * y), (ConstIntBound{-28, 21}));
  EXPECT_EQ(ana.const_int_bound(x * 4 + 3), (ConstIntBound{3, 31}));
  EXPECT_EQ(ana.const_int_bound(min(x, y)), (ConstIntBound{-4, 3}));
  EXPECT_EQ(ana.const_int_bound(max(x, y)), (ConstIntBound{0, 7}));
}

TEST(ConstIntBound, DivisionAndRemainderWithNegativeOperands) {
  Analyzer ana;
  Ref<Var> a = make_var("a"), d = make_var("d");
  ana.bind(a, range(-9, 19));  // [-9, 9]
  ana.bind(d, range(-3, 7));   // [-3, 3], zero excluded as a divisor
  EXPECT_EQ(ana.const_int_bound(floordiv(a, c32(4))), (ConstIntBound{-3, 2}));
  EXPECT_EQ(ana.const_int_bound(truncdiv(a, c32(4))), (ConstIntBound{-2, 2}));
  EXPECT_EQ(ana.const_int_bound(floormod(a, c32(4))), (ConstIntBound{0, 3}));
  EXPECT_EQ(ana.const_int_bound(floormod(a, c32(-4))), (ConstIntBound{-3, 0}));
  EXPECT_EQ(ana.const_int_bound(truncmod(a, c32(4))), (ConstIntBound{-3, 3}));
  EXPECT_EQ(ana.const_int_bound(floordiv(a, d)), (ConstIntBound{-9, 9}));
  EXPECT_EQ(ana.const_int_bound(floormod(a, d)), (ConstIntBound{-2, 2}));
  // All of the dividend in one period.
  Ref<Var> e = make_var("e");
  ana.bind(e, range(9, 3));  // [9, 11]
  EXPECT_EQ(ana.const_int_bound(floormod(e, c32(4))), (ConstIntBound{1, 3}));
  EXPECT_EQ(ana.const_int_bound(floordiv(e, c32(4))), (ConstIntBound{2, 2}));
}

TEST(ConstIntBound, SelectCastAndCalls) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ana.bind(x, range(0, 100));
  EXPECT_EQ(ana.const_int_bound(select(lt(x, c32(50)), x, c32(-5))), (ConstIntBound{-5, 99}));
  EXPECT_EQ(ana.const_int_bound(if_then_else(lt(x, c32(200)), x, c32(-5))), (ConstIntBound{0, 99}));
  // A cast that keeps every value keeps the bound; one that may wrap gives the dtype's range.
  EXPECT_EQ(ana.const_int_bound(cast(DataType::int_(8), x)), (ConstIntBound{0, 99}));
  EXPECT_EQ(ana.const_int_bound(cast(DataType::int_(8), x * 2)), (ConstIntBound{-128, 127}));
  EXPECT_EQ(ana.const_int_bound(call(Builtin::ShiftRight, {x, c32(2)})), (ConstIntBound{0, 24}));
  EXPECT_EQ(ana.const_int_bound(call(Builtin::ShiftLeft, {x, c32(1)})), (ConstIntBound{0, 198}));
  EXPECT_EQ(ana.const_int_bound(call(Builtin::BitwiseAnd, {x, c32(15)})), (ConstIntBound{0, 15}));
  EXPECT_EQ(ana.const_int_bound(call(Builtin::Abs, {x - 120})), (ConstIntBound{21, 120}));
  Ref<Var> v = make_var("v");
  EXPECT_EQ(ana.const_int_bound(let(v, x * 2, v + 1)), (ConstIntBound{1, 199}));
}

TEST(ConstIntBound, ComparisonsDecidedByBounds) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  ana.bind(x, range(0, 8));
  EXPECT_EQ(ana.const_int_bound(lt(x, c32(8))), ConstIntBound::single(1));
  EXPECT_EQ(ana.const_int_bound(lt(x, c32(0))), ConstIntBound::single(0));
  EXPECT_EQ(ana.const_int_bound(lt(x, c32(4))), (ConstIntBound{0, 1}));
}

TEST(ConstIntBound, UnsignedArithmeticThatMayWrapSaysNothing) {
  Analyzer ana;
  Ref<Var> u = make_var("u", DataType::uint(32));
  ana.update(u, ConstIntBound{0, 10});
  EXPECT_EQ(ana.const_int_bound(u + make_const(u->dtype, int64_t{1})), (ConstIntBound{1, 11}));
  // u - 1 wraps to 2^32 - 1 at u = 0.
  EXPECT_EQ(ana.const_int_bound(u - make_const(u->dtype, int64_t{1})),
            (ConstIntBound{0, 4294967295}));
}

TEST(ConstIntBound, SymbolicRangesAndValues) {
  Analyzer ana;
  Ref<Var> n = make_size_var("n"), i = make_var("i"), v = make_var("v");
  ana.bind(i, Range{c32(2), n});
  // i < n + 2 <= INT32_MAX: no overflow of index arithmetic.
  EXPECT_EQ(ana.const_int_bound(i), (ConstIntBound{2, INT32_MAX - 1}));
  ana.bind(v, c32(3) * 4);
  EXPECT_EQ(ana.const_int_bound(v), ConstIntBound::single(12));
}

TEST(ConstIntBound, PrintsInfinities) {
  std::ostringstream os;
  os << ConstIntBound{ConstIntBound::kNegInf, 5} << " " << ConstIntBound::everything();
  EXPECT_EQ(os.str(), "[-inf, 5] [-inf, +inf]");
}

}  // namespace
}  // namespace kiln::arith
