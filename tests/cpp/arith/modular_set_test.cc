// Tests of Analyzer::modular_set: what expressions are modulo a constant, through arithmetic,
// division, min/max/select, bound values and conditions.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::arith {
namespace {

using namespace ir;

Expr c32(int64_t v) {
  return int32_const(v);
}

TEST(ModularSet, ConstantsAndVariables) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  EXPECT_EQ(ana.modular_set(c32(7)), ModularSet::constant(7));
  EXPECT_EQ(ana.modular_set(x), ModularSet::everything());
}

TEST(ModularSet, Arithmetic) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  EXPECT_EQ(ana.modular_set(x * 4 + 1), (ModularSet{4, 1}));
  EXPECT_EQ(ana.modular_set(x * 4 - 1), (ModularSet{4, 3}));
  EXPECT_EQ(ana.modular_set((x * 4 + 2) * 3), (ModularSet{12, 6}));
  EXPECT_EQ(ana.modular_set(x * 6 + y * 4), (ModularSet{2, 0}));
  EXPECT_EQ(ana.modular_set(x * 4 * (y * 6)), (ModularSet{24, 0}));
}

TEST(ModularSet, DivisionAndRemainder) {
  Analyzer ana;
  Ref<Var> x = make_var("x");
  EXPECT_EQ(ana.modular_set(floordiv(x * 8 + 4, c32(2))), (ModularSet{4, 2}));
  EXPECT_EQ(ana.modular_set(floordiv(x * 8 + 5, c32(4))), (ModularSet{2, 1}));
  EXPECT_EQ(ana.modular_set(floormod(x * 8 + 5, c32(4))), ModularSet::constant(1));
  EXPECT_EQ(ana.modular_set(floormod(x * 6 + 1, c32(4))), (ModularSet{2, 1}));
  EXPECT_EQ(ana.modular_set(truncdiv(x * 8, c32(4))), (ModularSet{2, 0}));
  // truncdiv of a value that is not an exact multiple depends on its sign.
  EXPECT_EQ(ana.modular_set(truncdiv(x * 8 + 4, c32(8))), ModularSet::everything());
}

TEST(ModularSet, UnionOfBranches) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y");
  EXPECT_EQ(ana.modular_set(min(x * 4 + 1, y * 8 + 5)), (ModularSet{4, 1}));
  EXPECT_EQ(ana.modular_set(select(lt(x, y), x * 6, y * 4 + 2)), (ModularSet{2, 0}));
}

TEST(ModularSet, FromBindingsAndConditions) {
  Analyzer ana;
  Ref<Var> x = make_var("x"), v = make_var("v"), w = make_var("w");
  ana.bind(v, x * 4 + 2);
  EXPECT_EQ(ana.modular_set(v + 1), (ModularSet{4, 3}));
  ana.update(w, ModularSet{8, 3});
  EXPECT_EQ(ana.modular_set(w * 2), (ModularSet{16, 6}));
  Ref<Var> z = make_var("z");
  {
    ConstraintScope scope(&ana, eq(floormod(z, c32(4)), c32(1)));
    EXPECT_EQ(ana.modular_set(z), (ModularSet{4, 1}));
  }
  EXPECT_EQ(ana.modular_set(z), ModularSet::everything());
}

TEST(ModularSet, RejectsSetsThatAreNotNormalized) {
  Analyzer ana;
  Ref<Var> w = make_var("w");
  try {
    ana.update(w, ModularSet{4, 5});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("modular set {4 * k + 5} of variable w is not normalized"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModularSet, Prints) {
  std::ostringstream os;
  os << ModularSet{4, 1};
  EXPECT_EQ(os.str(), "{4 * k + 1}");
}

}  // namespace
}  // namespace kiln::arith
