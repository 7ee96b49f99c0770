// evaluate_int: integer index arithmetic at given variable values, and nothing where the
// expression is not such arithmetic or its value does not fit.
#include "kiln/arith/evaluate.h"

#include <gtest/gtest.h>

#include <limits>

#include "kiln/ir/op.h"

namespace kiln::arith {
namespace {

using namespace ir;

Expr c32(int64_t v) {
  return int32_const(v);
}

TEST(EvaluateInt, IndexArithmetic) {
  Ref<Var> t = make_var("t"), k = make_var("k");
  std::unordered_map<const Var*, int64_t> values = {{t.get(), 13}, {k.get(), -7}};
  EXPECT_EQ(evaluate_int(floordiv(t, c32(4)) * 256 + floormod(t, c32(4)) * 8 + k, values),
            3 * 256 + 8 - 7);
  EXPECT_EQ(evaluate_int(floordiv(k, c32(2)), values), -4);
  EXPECT_EQ(evaluate_int(floormod(k, c32(2)), values), 1);
  EXPECT_EQ(evaluate_int(truncdiv(k, c32(2)), values), -3);
  EXPECT_EQ(evaluate_int(truncmod(k, c32(2)), values), -1);
  EXPECT_EQ(evaluate_int(min(t, k) + max(t, k), values), 6);
  EXPECT_EQ(evaluate_int(cast(DataType::int64(), t), values), 13);
}

TEST(EvaluateInt, NothingForWhatIsNotIntegerArithmeticOrDoesNotFit) {
  Ref<Var> t = make_var("t"), z = make_var("z"), big = make_var("big", DataType::int64());
  int64_t lowest = std::numeric_limits<int64_t>::min();
  std::unordered_map<const Var*, int64_t> values = {
      {t.get(), 5}, {z.get(), 0}, {big.get(), lowest}};
  EXPECT_FALSE(evaluate_int(t + make_var("unknown"), values));
  EXPECT_FALSE(evaluate_int(floordiv(t, z), values));
  EXPECT_FALSE(evaluate_int(truncmod(t, z), values));
  EXPECT_FALSE(evaluate_int(big - make_const(DataType::int64(), 1), values));
  EXPECT_FALSE(evaluate_int(big * make_const(DataType::int64(), 2), values));
  EXPECT_FALSE(evaluate_int(floordiv(big, make_const(DataType::int64(), -1)), values));
  EXPECT_EQ(evaluate_int(floormod(big, make_const(DataType::int64(), -1)), values), 0);
  EXPECT_FALSE(evaluate_int(cast(DataType::float32(), t), values));
  EXPECT_FALSE(evaluate_int(lt(t, z), values));
  EXPECT_EQ(floor_divide(-1, 4), -1);
  EXPECT_EQ(floor_divide(7, 4), 1);
}

}  // namespace
}  // namespace kiln::arith
