// The identity table: expressions and the exact form the simplifier must reach, compared with
// structural equality. Variables: x, y, z unbound int32; i in [0, 8), j and k in [0, 4),
// m in [-8, 0); n a size variable and s in [0, n); b, c bools; u a uint32; f a float32.
#include <gtest/gtest.h>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::arith {
namespace {

using namespace ir;

struct Identity {
  const char* what;
  Expr input;
  Expr expected;
};

class SimplifyIdentities : public ::testing::Test {
 protected:
  void SetUp() override {
    auto bind = [&](const Ref<Var>& v, int64_t lo, int64_t extent) {
      ana.bind(v, Range{int32_const(lo), int32_const(extent)});
    };
    bind(i, 0, 8);
    bind(j, 0, 4);
    bind(k, 0, 4);
    bind(m, -8, 8);
    ana.bind(s, Range{int32_const(0), n});
  }

  // Runs every identity and reports each one that does not reach its expected form.
  void check(const std::vector<Identity>& table) {
    for (const Identity& id : table) {
      Expr out = ana.simplify(id.input);
      EXPECT_TRUE(structural_equal(out, id.expected))
          << id.what << "\n  input:    " << id.input << "\n  expected: " << id.expected
          << "\n  got:      " << out;
    }
  }

  Analyzer ana;
  Ref<Var> x = make_var("x"), y = make_var("y"), z = make_var("z");
  Ref<Var> i = make_var("i"), j = make_var("j"), k = make_var("k"), m = make_var("m");
  Ref<Var> n = make_size_var("n"), s = make_var("s");
  Ref<Var> b = make_var("b", DataType::bool_()), c = make_var("c", DataType::bool_());
  Ref<Var> u = make_var("u", DataType::uint(32));
  Ref<Var> f = make_var("f", DataType::float32());
  Expr t = bool_const(true), F = bool_const(false);
};

Expr i32(int64_t v) {
  return int32_const(v);
}

// Integer literals as the second operand, like the + - * operators of op.h.
Expr floordiv(const Expr& a, int64_t v) {
  return ir::floordiv(a, literal_like(v, a));
}
Expr floormod(const Expr& a, int64_t v) {
  return ir::floormod(a, literal_like(v, a));
}
Expr truncdiv(const Expr& a, int64_t v) {
  return ir::truncdiv(a, literal_like(v, a));
}
Expr truncmod(const Expr& a, int64_t v) {
  return ir::truncmod(a, literal_like(v, a));
}
Expr min(const Expr& a, int64_t v) {
  return ir::min(a, literal_like(v, a));
}
Expr max(const Expr& a, int64_t v) {
  return ir::max(a, literal_like(v, a));
}
Expr lt(const Expr& a, int64_t v) {
  return ir::lt(a, literal_like(v, a));
}
Expr le(const Expr& a, int64_t v) {
  return ir::le(a, literal_like(v, a));
}
Expr gt(const Expr& a, int64_t v) {
  return ir::gt(a, literal_like(v, a));
}
Expr ge(const Expr& a, int64_t v) {
  return ir::ge(a, literal_like(v, a));
}
Expr eq(const Expr& a, int64_t v) {
  return ir::eq(a, literal_like(v, a));
}
Expr ne(const Expr& a, int64_t v) {
  return ir::ne(a, literal_like(v, a));
}
Expr select(const Expr& c, const Expr& a, int64_t v) {
  return ir::select(c, a, literal_like(v, a));
}
Expr if_then_else(const Expr& c, const Expr& a, int64_t v) {
  return ir::if_then_else(c, a, literal_like(v, a));
}
using ir::eq;
using ir::floordiv;
using ir::floormod;
using ir::ge;
using ir::gt;
using ir::if_then_else;
using ir::le;
using ir::lt;
using ir::max;
using ir::min;
using ir::ne;
using ir::select;
using ir::truncdiv;
using ir::truncmod;

template <class Node>
Expr raw(DataType t, Expr a, Expr b) {
  return make<Node>(t, a, b);
}

TEST_F(SimplifyIdentities, AddSubMul) {
  check({
      {"x - x", x - x, i32(0)},
      {"(x + 3) - 3", (x + 3) - 3, x},
      {"x + 0", raw<Add>(DataType::int32(), x, i32(0)), x},
      {"0 + x", raw<Add>(DataType::int32(), i32(0), x), x},
      {"x - 0", raw<Sub>(DataType::int32(), x, i32(0)), x},
      {"3 + x", raw<Add>(DataType::int32(), i32(3), x), x + 3},
      {"x + -3", raw<Add>(DataType::int32(), x, i32(-3)), x - 3},
      {"x - -3", raw<Sub>(DataType::int32(), x, i32(-3)), x + 3},
      {"(x + 2) + 5", (x + 2) + 5, x + 7},
      {"(x - 2) + 5", (x - 2) + 5, x + 3},
      {"(5 - x) + 2", (5 - x) + 2, 7 - x},
      {"x*2 + x", x * 2 + x, x * 3},
      {"x + x", x + x, x * 2},
      {"x*3 - x", x * 3 - x, x * 2},
      {"x*3 - x*3", x * 3 - x * 3, i32(0)},
      {"x*2 + x*5", x * 2 + x * 5, x * 7},
      {"(x + y) - x", (x + y) - x, y},
      {"(x + y) - y", (x + y) - y, x},
      {"(x - y) + y", (x - y) + y, x},
      {"x - (x + y)", x - (x + y), 0 - y},
      {"x - (x - y)", x - (x - y), y},
      {"(x + 3) - (y + 1)", (x + 3) - (y + 1), x - y + 2},
      {"(x + y) + (z - y)", (x + y) + (z - y), x + z},
      {"x*1", raw<Mul>(DataType::int32(), x, i32(1)), x},
      {"x*0", raw<Mul>(DataType::int32(), x, i32(0)), i32(0)},
      {"3*x", raw<Mul>(DataType::int32(), i32(3), x), x * 3},
      {"(x*2)*3", (x * 2) * 3, x * 6},
      {"(x + 1)*2", (x + 1) * 2, x * 2 + 2},
      {"(x - 1)*3", (x - 1) * 3, x * 3 - 3},
      {"x*y - y*x", x * y - y * x, i32(0)},
      {"x*y*2 + y*x", x * y * 2 + y * x, x * y * 3},
      {"(x + 1)*(y + 2) - (x + 1)*(y + 2)", (x + 1) * (y + 2) - (x + 1) * (y + 2), i32(0)},
      {"x*4 + y*4 - (x + y)*4", x * 4 + y * 4 - (x + y) * 4, i32(0)},
      {"min(x, y) + max(x, y)", min(x, y) + max(x, y), x + y},
      {"max(x + 3, x) - min(x, x + 3)", max(x + 3, x) - min(x, x + 3), i32(3)},
      {"int8 100 + 100 wraps",
       raw<Add>(DataType::int_(8), make_const(DataType::int_(8), int64_t{100}),
                make_const(DataType::int_(8), int64_t{100})),
       make_const(DataType::int_(8), int64_t{-56})},
      {"uint32 u + 0", raw<Add>(u->dtype, u, make_const(u->dtype, int64_t{0})), u},
      {"uint32 u - u", raw<Sub>(u->dtype, u, u), make_const(u->dtype, int64_t{0})},
      {"uint32 u - 1 stays", raw<Sub>(u->dtype, u, make_const(u->dtype, int64_t{1})),
       raw<Sub>(u->dtype, u, make_const(u->dtype, int64_t{1}))},
      {"float 1.5 + 2.5",
       raw<Add>(DataType::float32(), make_const(DataType::float32(), 1.5),
                make_const(DataType::float32(), 2.5)),
       make_const(DataType::float32(), 4.0)},
      {"float f + 0.0 stays (-0.0 + 0.0 is 0.0)",
       raw<Add>(DataType::float32(), f, make_const(DataType::float32(), 0.0)),
       raw<Add>(DataType::float32(), f, make_const(DataType::float32(), 0.0))},
      {"float (f + 1) + 2 is not reassociated", (f + 1.0f) + 2.0f, (f + 1.0f) + 2.0f},
  });
}

// Index types never fold to a wrapped constant: the simplifier says so instead.
TEST_F(SimplifyIdentities, SignedIndexOverflowIsAnError) {
  Expr e = raw<Add>(DataType::int64(), make_const(DataType::int64(), int64_t{INT64_MAX}),
                    make_const(DataType::int64(), int64_t{1}));
  Analyzer analyzer;
  try {
    analyzer.simplify(e);
    FAIL() << "expected an error";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), kiln::ErrorKind::kValue);
    EXPECT_NE(std::string(error.what())
                  .find("9223372036854775807 + 1 = 9223372036854775808 does "
                        "not fit int64"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(SimplifyIdentities, DivMod) {
  check({
      {"(x*4 + j) // 4", floordiv(x * 4 + j, 4), x},
      {"(i*8 + j) % 8", floormod(i * 8 + j, 8), j},
      {"(x*8 + j) % 8", floormod(x * 8 + j, 8), j},
      {"(x*4 + j) % 4", floormod(x * 4 + j, 4), j},
      {"floordiv(x, 4)*4 + floormod(x, 4)", floordiv(x, 4) * 4 + floormod(x, 4), x},
      {"floormod(x, 4) + floordiv(x, 4)*4", floormod(x, 4) + floordiv(x, 4) * 4, x},
      {"(x // 2)*2 + x % 2", floordiv(x, 2) * 2 + floormod(x, 2), x},
      {"truncdiv(x, 3)*3 + truncmod(x, 3)", truncdiv(x, 3) * 3 + truncmod(x, 3), x},
      {"x - floordiv(x, 4)*4", x - floordiv(x, 4) * 4, floormod(x, 4)},
      {"three-way split recombines",
       floordiv(x, 16) * 16 + floormod(floordiv(x, 4), 4) * 4 + floormod(x, 4), x},
      {"((i*16 + j*4 + k) // 4) % 4", floormod(floordiv(i * 16 + j * 4 + k, 4), 4), j},
      {"(i*16 + j*4 + k) // 16", floordiv(i * 16 + j * 4 + k, 16), i},
      {"(i*16 + j*4 + k) % 16", floormod(i * 16 + j * 4 + k, 16), j * 4 + k},
      {"(j*4 + k) // 4", floordiv(j * 4 + k, 4), j},
      {"(x*4 + j) // 8 drops j", floordiv(x * 4 + j, 8), floordiv(x, 2)},
      {"(x*4 + j) % 8", floormod(x * 4 + j, 8), floormod(x, 2) * 4 + j},
      {"x*6 // 3", floordiv(x * 6, 3), x * 2},
      {"x*2 // 4", floordiv(x * 2, 4), floordiv(x, 2)},
      {"(x + 8) // 4", floordiv(x + 8, 4), floordiv(x, 4) + 2},
      {"(x*4 - 1) // 4", floordiv(x * 4 - 1, 4), x - 1},
      {"(x*4 + 2) % 2", floormod(x * 4 + 2, 2), i32(0)},
      {"(x*4 + 3) % 2", floormod(x * 4 + 3, 2), i32(1)},
      {"(x*6 + 4) % 3", floormod(x * 6 + 4, 3), i32(1)},
      {"(x + 7) % 4 keeps a remainder in [0, 4)", floormod(x + 7, 4), floormod(x + 3, 4)},
      {"floordiv(floordiv(x, 2), 4)", floordiv(floordiv(x, 2), 4), floordiv(x, 8)},
      {"floormod(floordiv(x, 4), 8) stays", floormod(floordiv(x, 4), 8),
       floormod(floordiv(x, 4), 8)},
      {"floormod(floormod(x, 8), 4)", floormod(floormod(x, 8), 4), floormod(x, 4)},
      {"floordiv(floormod(x*2, 4), 2)", floordiv(floormod(x * 2, 4), 2), floormod(x, 2)},
      {"floordiv(x, 1)", floordiv(x, 1), x},
      {"floormod(x, 1)", floormod(x, 1), i32(0)},
      {"floordiv(x, -1)", floordiv(x, -1), 0 - x},
      {"floordiv(x, -4) is floordiv(-x, 4)", floordiv(x, -4), floordiv(0 - x, 4)},
      {"floordiv(i, 8) with i in [0, 8)", floordiv(i, 8), i32(0)},
      {"floormod(i, 8) with i in [0, 8)", floormod(i, 8), i},
      {"floordiv(m, 8) with m in [-8, 0)", floordiv(m, 8), i32(-1)},
      {"floormod(m, 8) with m in [-8, 0)", floormod(m, 8), m + 8},
      {"floordiv(m - 8, 8)", floordiv(m - 8, 8), i32(-2)},
      {"truncdiv(m + 1, 8) with m in [-8, 0)", truncdiv(m + 1, 8), i32(0)},
      {"truncmod(m + 1, 8) with m in [-8, 0)", truncmod(m + 1, 8), m + 1},
      {"truncdiv(m, 8) stays (-1 at m = -8)", truncdiv(m, 8), truncdiv(m, 8)},
      {"truncdiv(m*8 - 3, 8) of a negative", truncdiv(m * 8 - 3, 8), m},
      {"truncdiv(m*8, 4)", truncdiv(m * 8, 4), m * 2},
      {"truncdiv(i*4 + j, 4) of a non-negative", truncdiv(i * 4 + j, 4), i},
      {"truncmod(i*4 + j, 4) of a non-negative", truncmod(i * 4 + j, 4), j},
      {"truncmod(x*4, 2)", truncmod(x * 4, 2), i32(0)},
      {"truncdiv(x*6, 3)", truncdiv(x * 6, 3), x * 2},
      {"floordiv(-7, 2)", raw<FloorDiv>(DataType::int32(), i32(-7), i32(2)), i32(-4)},
      {"floormod(-7, 2)", raw<FloorMod>(DataType::int32(), i32(-7), i32(2)), i32(1)},
      {"floordiv(7, -2)", raw<FloorDiv>(DataType::int32(), i32(7), i32(-2)), i32(-4)},
      {"floormod(7, -2)", raw<FloorMod>(DataType::int32(), i32(7), i32(-2)), i32(-1)},
      {"truncdiv(-7, 2)", raw<Div>(DataType::int32(), i32(-7), i32(2)), i32(-3)},
      {"truncmod(-7, 2)", raw<Mod>(DataType::int32(), i32(-7), i32(2)), i32(-1)},
      {"floordiv(x, x)", floordiv(x, x), i32(1)},
      {"floormod(x*y, y)", floormod(x * y, y), i32(0)},
      {"floordiv by zero stays", raw<FloorDiv>(DataType::int32(), x, i32(0)),
       raw<FloorDiv>(DataType::int32(), x, i32(0))},
  });
}

TEST_F(SimplifyIdentities, MinMax) {
  check({
      {"min(x, x + 1)", min(x, x + 1), x},
      {"max(x, x + 1)", max(x, x + 1), x + 1},
      {"min(x, x)", min(x, x), x},
      {"min(i, 10) with i < 8", min(i, 10), i},
      {"max(i, 0) with i >= 0", max(i, 0), i},
      {"max(m, 0) with m < 0", max(m, 0), i32(0)},
      {"min(j, 2) stays", min(j, 2), min(j, 2)},
      {"min(min(x, 3), 5)", min(min(x, 3), 5), min(x, 3)},
      {"max(max(x, 3), 5)", max(max(x, 3), 5), max(x, 5)},
      {"min(3, x)", min(i32(3), x), min(x, 3)},
      {"min(x + 2, 5)", min(x + 2, 5), min(x, 3) + 2},
      {"min(x*2, y*2)", min(x * 2, y * 2), min(x, y) * 2},
      {"max(x*-2, y*-2)", max(x * -2, y * -2), 0 - min(x, y) * 2},
      {"min(x + z, y + z)", min(x + z, y + z), min(x, y) + z},
      {"max(x - z, y - z)", max(x - z, y - z), max(x, y) - z},
      {"min(max(x, y), x)", min(max(x, y), x), x},
      {"max(min(x, y), y)", max(min(x, y), y), y},
      {"min(min(x, y), x)", min(min(x, y), x), min(x, y)},
      {"min(max(x, 2), 9) is a clamp", min(max(x, 2), 9), max(min(x, 9), 2)},
      {"max(x, y) - y", max(x, y) - y, max(x - y, 0)},
      {"x - min(x, y)", x - min(x, y), max(x - y, 0)},
      {"min(x // 4, y // 4)", min(floordiv(x, 4), floordiv(y, 4)), floordiv(min(x, y), 4)},
  });
}

TEST_F(SimplifyIdentities, Comparisons) {
  check({
      {"i < 16 with i in [0, 8)", lt(i, 16), t},
      {"i < 7 stays", lt(i, 7), lt(i, 7)},
      {"i >= 0", ge(i, 0), t},
      {"m < 0", lt(m, 0), t},
      {"j > 3", gt(j, 3), F},
      {"s < n with s in [0, n)", lt(s, n), t},
      {"s < n + 1", lt(s, n + 1), t},
      {"s >= n", ge(s, n), F},
      {"x + 1 < y + 1", lt(x + 1, y + 1), lt(x, y)},
      {"x*2 < y*2", lt(x * 2, y * 2), lt(x, y)},
      {"x*2 < 3", lt(x * 2, 3), lt(x, 2)},
      {"x*2 + 4 < y*2 + 2", lt(x * 2 + 4, y * 2 + 2), lt(x + 1, y)},
      {"x > y", gt(x, y), lt(y, x)},
      {"x >= y", ge(x, y), le(y, x)},
      {"x + 5 <= y stays", le(x + 5, y), le(x + 5, y)},
      {"x - 1 < y", lt(x - 1, y), le(x, y)},
      {"x < y + 3", lt(x, y + 3), lt(x, y + 3)},
      {"3 < x stays", lt(i32(3), x), lt(i32(3), x)},
      {"0 - x < 3", lt(0 - x, 3), lt(i32(-3), x)},
      {"x < x", lt(x, x), F},
      {"x <= x", le(x, x), t},
      {"x == x", eq(x, x), t},
      {"x + 1 == x", eq(x + 1, x), F},
      {"x*2 == 3", eq(x * 2, 3), F},
      {"x*2 == y*2", eq(x * 2, y * 2), eq(x, y)},
      {"x*2 != x*2 + 1", ne(x * 2, x * 2 + 1), t},
      {"x + 3 == y", eq(x + 3, y), eq(x + 3, y)},
      {"0 - x == 5", eq(0 - x, 5), eq(x, -5)},
      {"floordiv(x, 4) < 3", lt(floordiv(x, 4), 3), lt(x, 12)},
      {"2 < floordiv(x, 4)", lt(i32(2), floordiv(x, 4)), lt(i32(11), x)},
      {"floordiv(x, 4) <= 3", le(floordiv(x, 4), 3), le(x, 15)},
      {"floormod(x, 4) < 4", lt(floormod(x, 4), 4), t},
      {"floormod(x, 4) >= 0", ge(floormod(x, 4), 0), t},
      {"floormod(x, -4) <= 0", le(floormod(x, -4), 0), t},
      {"floormod(x*4 + 1, 4) == 1", eq(floormod(x * 4 + 1, 4), 1), t},
      {"i*4 + j < 32", lt(i * 4 + j, 32), t},
      {"uint32 u < 0", lt(u, make_const(u->dtype, int64_t{0})), F},
      {"uint32 u >= 0", ge(u, make_const(u->dtype, int64_t{0})), t},
      {"float 1.0 < 2.0",
       lt(make_const(DataType::float32(), 1.0), make_const(DataType::float32(), 2.0)), t},
      {"float f == f stays (NaN)", eq(f, f), eq(f, f)},
  });
}

TEST_F(SimplifyIdentities, Logic) {
  check({
      {"x < 5 && x < 10", logical_and(lt(x, 5), lt(x, 10)), lt(x, 5)},
      {"x < 10 && x < 5", logical_and(lt(x, 10), lt(x, 5)), lt(x, 5)},
      {"x < 5 || x < 10", logical_or(lt(x, 5), lt(x, 10)), lt(x, 10)},
      {"x < 3 && 5 < x", logical_and(lt(x, 3), lt(i32(5), x)), F},
      {"x < y && y < x", logical_and(lt(x, y), lt(y, x)), F},
      {"x < y || y <= x", logical_or(lt(x, y), le(y, x)), t},
      {"x == 3 && x != 3", logical_and(eq(x, 3), ne(x, 3)), F},
      {"x == 3 && x + 1 == 4", logical_and(eq(x, 3), eq(x + 1, 4)), eq(x, 3)},
      {"b && !b", raw<And>(DataType::bool_(), b, make<Not>(DataType::bool_(), b)), F},
      {"b || !b", raw<Or>(DataType::bool_(), b, make<Not>(DataType::bool_(), b)), t},
      {"b && b", raw<And>(DataType::bool_(), b, b), b},
      {"b && true", raw<And>(DataType::bool_(), b, t), b},
      {"b || true", raw<Or>(DataType::bool_(), b, t), t},
      {"b && c stays", logical_and(b, c), logical_and(b, c)},
      {"!!b", make<Not>(DataType::bool_(), make<Not>(DataType::bool_(), b)), b},
      {"!(x < y)", logical_not(lt(x, y)), le(y, x)},
      {"!(x == y)", logical_not(eq(x, y)), ne(x, y)},
      {"!(b && c)", logical_not(logical_and(b, c)), logical_or(logical_not(b), logical_not(c))},
      {"!(f < 1.0) stays (NaN)", logical_not(lt(f, make_const(DataType::float32(), 1.0))),
       logical_not(lt(f, make_const(DataType::float32(), 1.0)))},
      {"b == true", raw<EQ>(DataType::bool_(), b, t), b},
      {"b != true", raw<NE>(DataType::bool_(), b, t), logical_not(b)},
      {"i < 8 && j < 4", logical_and(lt(i, 8), lt(j, 4)), t},
  });
}

TEST_F(SimplifyIdentities, SelectCastLetCalls) {
  DataType i64 = DataType::int64();
  Ref<Var> v = make_var("v");
  check({
      {"select(true, x, y)", make<Select>(DataType::int32(), t, x, y), x},
      {"select(false, x, y)", make<Select>(DataType::int32(), F, x, y), y},
      {"select(b, x, x)", select(b, x, x), x},
      {"select(x < y, x, y)", select(lt(x, y), x, y), min(x, y)},
      {"select(x < y, y, x)", select(lt(x, y), y, x), max(x, y)},
      {"select(!b, x, y)", select(logical_not(b), x, y), select(b, y, x)},
      {"select(x < 5, select(x < 5, y, z), x)", select(lt(x, 5), select(lt(x, 5), y, z), x),
       select(lt(x, 5), y, x)},
      {"select(x < 5, min(x, 7), 0)", select(lt(x, 5), min(x, 7), 0), select(lt(x, 5), x, 0)},
      {"select(i < 8, x, y) with i < 8", select(lt(i, 8), x, y), x},
      {"if_then_else(x == 3, x + 1, 0)", if_then_else(eq(x, 3), x + 1, 0),
       if_then_else(eq(x, 3), i32(4), i32(0))},
      {"if_then_else(b, x, x)", if_then_else(b, x, x), x},
      // Each arm that is not a number is simplified knowing its side of the condition.
      {"if_then_else(x < 3, 7, min(x, 2))", if_then_else(lt(x, 3), i32(7), min(x, i32(2))),
       if_then_else(lt(x, 3), i32(7), i32(2))},
      {"if_then_else(x < 3, max(x, 2), 0)", if_then_else(lt(x, 3), max(x, i32(2)), 0),
       if_then_else(lt(x, 3), i32(2), i32(0))},
      {"cast(int32, cast(int64, x))", cast(DataType::int32(), cast(i64, x)), x},
      {"cast(int64, 3)", make<Cast>(i64, i32(3)), make_const(i64, int64_t{3})},
      {"let v = 3 in v + 1", let(v, i32(3), v + 1), i32(4)},
      {"let v = x*2 in v - v", let(v, x * 2, v - v), i32(0)},
      {"let v = x*2 in v + 1 stays", let(v, x * 2, v + 1), let(v, x * 2, v + 1)},
      {"shift_left(3, 2)", call(Builtin::ShiftLeft, {i32(3), i32(2)}), i32(12)},
      {"bitwise_and(12, 10)", call(Builtin::BitwiseAnd, {i32(12), i32(10)}), i32(8)},
  });
}

TEST_F(SimplifyIdentities, Vectors) {
  Expr four = broadcast(i32(4), 4);
  check({
      {"ramp(x*4, 1, 4) // 4", floordiv(ramp(x * 4, i32(1), 4), four), broadcast(x, 4)},
      {"ramp(x*4, 1, 4) % 4", floormod(ramp(x * 4, i32(1), 4), four), ramp(i32(0), i32(1), 4)},
      {"ramp(x, 8, 4) // 4", floordiv(ramp(x, i32(8), 4), four), ramp(floordiv(x, 4), i32(2), 4)},
      {"ramp(x, 8, 4) % 4", floormod(ramp(x, i32(8), 4), four), broadcast(floormod(x, 4), 4)},
      {"ramp(x, 1, 4) + broadcast(y)", ramp(x, i32(1), 4) + broadcast(y, 4),
       ramp(x + y, i32(1), 4)},
      {"ramp(x, 1, 4) + ramp(y, 2, 4)", ramp(x, i32(1), 4) + ramp(y, i32(2), 4),
       ramp(x + y, i32(3), 4)},
      {"broadcast(y) - ramp(x, 1, 4)", broadcast(y, 4) - ramp(x, i32(1), 4),
       ramp(y - x, i32(-1), 4)},
      {"ramp(x, 2, 4) * 3", ramp(x, i32(2), 4) * broadcast(i32(3), 4), ramp(x * 3, i32(6), 4)},
      {"broadcast(x) + broadcast(x)", broadcast(x, 4) + broadcast(x, 4), broadcast(x * 2, 4)},
      {"ramp(x, 0, 4)", make<Ramp>(DataType::int_(32, 4), x, i32(0), 4), broadcast(x, 4)},
      {"ramp(j, 1, 4) < 8 with j in [0, 4)", lt(ramp(j, i32(1), 4), broadcast(i32(8), 4)),
       broadcast(t, 4)},
      {"ramp(i*8, 1, 8) // 8 with i in [0, 8)",
       floordiv(ramp(i * 8, i32(1), 8), broadcast(i32(8), 8)), broadcast(i, 8)},
      // The lanes stay in one period of 16 when the base is a multiple of 4 (gcd(4, 16) = 4)
      // plus at most 4 - 4: a rotation by half a period, as RoPE's partner feature.
      {"ramp(x*4 + 8, 1, 4) % 16", floormod(ramp(x * 4 + 8, i32(1), 4), broadcast(i32(16), 4)),
       ramp(floormod(x * 4 + 8, 16), i32(1), 4)},
      {"ramp(x*4 + 8, 1, 4) // 16", floordiv(ramp(x * 4 + 8, i32(1), 4), broadcast(i32(16), 4)),
       broadcast(floordiv(x * 4 + 8, 16), 4)},
      // A base of 4k + 2 may put lanes on both sides of a multiple of 16: no ramp.
      {"ramp(x*4 + 2, 1, 4) % 16 stays",
       floormod(ramp(x * 4 + 2, i32(1), 4), broadcast(i32(16), 4)),
       floormod(ramp(x * 4 + 2, i32(1), 4), broadcast(i32(16), 4))},
  });
}

}  // namespace
}  // namespace kiln::arith
