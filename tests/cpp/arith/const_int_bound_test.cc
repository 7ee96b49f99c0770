// Tests of Analyzer::const_int_bound: interval arithmetic over each expression kind, variable
// bounds from bind and size variables, and dtype limits.
#include <gtest/gtest.h>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"

namespace kiln::arith {
namespace {

using namespace ir;

Range range(int64_t min, int64_t extent) {
  return Range{int32_const(min), int32_const(extent)};
}

TEST(ConstIntBound, ConstantsAndUnboundVariables) {
  Analyzer ana;
  EXPECT_EQ(ana.const_int_bound(int32_const(7)), ConstIntBound::single(7));
  Ref<Var> x = make_var("x");
  EXPECT_EQ(ana.const_int_bound(x), (ConstIntBound{INT32_MIN, INT32_MAX}));
  Ref<Var> n = make_size_var("n");
  EXPECT_EQ(ana.const_int_bound(n), (ConstIntBound{0, INT32_MAX}));
  Ref<Var> w = make_var("w", DataType::int64());
  EXPECT_TRUE(ana.const_int_bound(w).is_everything());
  Ref<Var> b = make_var("b", DataType::uint(8));
  EXPECT_EQ(ana.const_int_bound(b), (ConstIntBound{0, 255}));
}

TEST(ConstIntBound, ArithmeticOfBoundVariables) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  ana.bind(x, range(0, 8));
  ana.bind(y, range(-4, 8));
  EXPECT_EQ(ana.const_int_bound(x + y), (ConstIntBound{-4, 10}));
  EXPECT_EQ(ana.const_int_bound(x - y), (ConstIntBound{-3, 11}));
  EXPECT_EQ(ana.const_int_bound(x * y), (ConstIntBound{-28, 21}));
  EXPECT_EQ(ana.const_int_bound(x * 4 + 3), (ConstIntBound{3, 31}));
  EXPECT_EQ(ana.const_int_bound(min(x, y)), (ConstIntBound{-4, 3}));
  EXPECT_EQ(ana.const_int_bound(max(x, y)), (ConstIntBound{0, 7}));
}

}  // namespace
}  // namespace kiln::arith
