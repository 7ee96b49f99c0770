// Rewrite rules for division and remainder: floordiv/floormod (rounding toward negative
// infinity) and Div/Mod (truncating). Exact divisions distribute; bounds and modular sets
// decide quotients and remainders that are constant over the operand's range.
#include "src/arith/int_math.h"
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

namespace {

// The constant c of a divisor, when it is one and not zero.
std::optional<int64_t> nonzero_const(const Expr& e) {
  const int64_t* c = as_const_int(e);
  if (c == nullptr || *c == 0) return std::nullopt;
  return *c;
}

}  // namespace

Expr RewriteSimplifier::visit(const FloorDiv* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* div = e.as<FloorDiv>();
  if (div == nullptr || !is_index(e)) return e;
  // A quotient that is the same over the whole range of the dividend is a constant.
  if (std::optional<int64_t> c = nonzero_const(div->b)) {
    ConstIntBound a = bound(div->a);
    if (a.min_value != kNegInf && a.max_value != kPosInf &&
        floordiv_int(a.min_value, *c) == floordiv_int(a.max_value, *c)) {
      return make_const(e->dtype, floordiv_int(a.min_value, *c));
    }
  }
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  // clang-format off
  if (rewrite(floordiv(x, 1), x) ||
      rewrite(floordiv(x, -1), 0 - x) ||
      rewrite(floordiv(x, x), 1) ||
      rewrite(floordiv(x * y, y), x) ||
      rewrite(floordiv(y * x, y), x) ||
      rewrite(floordiv(x * c1, c2), x * fold(c1 / c2), c2 != 0 && c1 % c2 == 0) ||
      rewrite(floordiv(x * c1, c2), floordiv(x, fold(c2 / c1)),
              c1 > 0 && c2 > 0 && c2 % c1 == 0) ||
      rewrite(floordiv(x * c1 + y, c2), x * fold(c1 / c2) + floordiv(y, c2),
              c2 != 0 && c1 % c2 == 0) ||
      rewrite(floordiv(y + x * c1, c2), floordiv(y, c2) + x * fold(c1 / c2),
              c2 != 0 && c1 % c2 == 0) ||
      rewrite(floordiv(x * c1 - y, c2), x * fold(c1 / c2) + floordiv(0 - y, c2),
              c2 != 0 && c1 % c2 == 0) ||
      rewrite(floordiv(x + c1, c2), floordiv(x, c2) + fold(c1 / c2),
              c2 != 0 && c1 % c2 == 0) ||
      rewrite(floordiv(floordiv(x, c1), c2), floordiv(x, fold(c1 * c2)), c1 > 0 && c2 > 0)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

Expr RewriteSimplifier::visit(const FloorMod* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* mod = e.as<FloorMod>();
  if (mod == nullptr || !is_index(e)) return e;
  if (std::optional<int64_t> c = nonzero_const(mod->b)) {
    // All of the dividend in one period [k*c, (k+1)*c): the remainder is a - k*c.
    ConstIntBound a = bound(mod->a);
    if (a.min_value != kNegInf && a.max_value != kPosInf &&
        floordiv_int(a.min_value, *c) == floordiv_int(a.max_value, *c)) {
      int64_t k = floordiv_int(a.min_value, *c);
      if (k == 0) return mod->a;
      std::optional<int64_t> shift = checked_mul(k, *c);
      if (shift && wrap_to_dtype(*shift, e->dtype) == *shift) {
        return resimplify(sub(mod->a, make_const(e->dtype, *shift)));
      }
    }
    // A dividend known modulo a multiple of c has a constant remainder.
    ModularSet m = impl_->modular(mod->a);
    if (m.coeff != 0 && m.coeff % *c == 0) return make_const(e->dtype, floormod_int(m.base, *c));
  }
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  // clang-format off
  if (rewrite(floormod(x, 1), 0) ||
      rewrite(floormod(x, -1), 0) ||
      rewrite(floormod(x, x), 0) ||
      rewrite(floormod(x * y, y), 0) ||
      rewrite(floormod(y * x, y), 0) ||
      rewrite(floormod(x * c1, c2), 0, c2 != 0 && c1 % c2 == 0) ||
      rewrite(floormod(x * c1 + y, c2), floormod(y, c2), c2 != 0 && c1 % c2 == 0) ||
      rewrite(floormod(y + x * c1, c2), floormod(y, c2), c2 != 0 && c1 % c2 == 0) ||
      rewrite(floormod(x + c1, c2), floormod(x, c2), c2 != 0 && c1 % c2 == 0) ||
      rewrite(floormod(x + c1, c2), floormod(x + fold(floormod(c1, c2)), c2),
              c2 > 0 && (c1 < 0 || c1 >= c2)) ||
      rewrite(floormod(floormod(x, c1), c2), floormod(x, c2), c2 != 0 && c1 % c2 == 0)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

Expr RewriteSimplifier::visit(const Div* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* div = e.as<Div>();
  if (div == nullptr || !is_index(e)) return e;
  if (std::optional<int64_t> c = nonzero_const(div->b)) {
    // Truncation is monotone too: equal quotients at both ends make a constant.
    ConstIntBound a = bound(div->a);
    if (a.min_value != kNegInf && a.max_value != kPosInf &&
        truncdiv_int(a.min_value, *c) == truncdiv_int(a.max_value, *c)) {
      return make_const(e->dtype, truncdiv_int(a.min_value, *c));
    }
  }
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  // With a non-negative dividend and a positive divisor, truncation is floor division.
  // clang-format off
  if (rewrite(truncdiv(x, 1), x) ||
      rewrite(truncdiv(x, -1), 0 - x) ||
      rewrite(truncdiv(x, x), 1) ||
      rewrite(truncdiv(x * y, y), x) ||
      rewrite(truncdiv(y * x, y), x) ||
      rewrite(truncdiv(x * c1, c2), x * fold(c1 / c2), c2 != 0 && c1 % c2 == 0) ||
      rewrite(truncdiv(x * c1 + y, c2), x * fold(c1 / c2) + truncdiv(y, c2),
              c2 > 0 && c1 % c2 == 0 && can_prove(y >= 0) && can_prove(x * c1 + y >= 0)) ||
      rewrite(truncdiv(x + c1, c2), truncdiv(x, c2) + fold(c1 / c2),
              c2 > 0 && c1 % c2 == 0 && can_prove(x >= 0) && can_prove(x + c1 >= 0)) ||
      rewrite(truncdiv(truncdiv(x, c1), c2), truncdiv(x, fold(c1 * c2)), c1 > 0 && c2 > 0)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

Expr RewriteSimplifier::visit(const Mod* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* mod = e.as<Mod>();
  if (mod == nullptr || !is_index(e)) return e;
  if (std::optional<int64_t> c = nonzero_const(mod->b)) {
    // |truncmod(a, c)| < |c| with the sign of a: a itself when |a| < |c|.
    std::optional<int64_t> limit = checked_neg(*c < 0 ? *c : -*c);
    if (limit && in_range(mod->a, 1 - *limit, *limit - 1)) return mod->a;
    // A non-negative dividend known modulo a multiple of c has a constant remainder.
    ModularSet m = impl_->modular(mod->a);
    if (limit && m.coeff != 0 && m.coeff % *c == 0 && bound(mod->a).min_value >= 0) {
      return make_const(e->dtype, floormod_int(m.base, *limit));
    }
  }
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  // clang-format off
  if (rewrite(truncmod(x, 1), 0) ||
      rewrite(truncmod(x, -1), 0) ||
      rewrite(truncmod(x, x), 0) ||
      rewrite(truncmod(x * y, y), 0) ||
      rewrite(truncmod(y * x, y), 0) ||
      rewrite(truncmod(x * c1, c2), 0, c2 != 0 && c1 % c2 == 0) ||
      rewrite(truncmod(x * c1 + y, c2), truncmod(y, c2),
              c2 > 0 && c1 % c2 == 0 && can_prove(y >= 0) && can_prove(x * c1 + y >= 0)) ||
      rewrite(truncmod(x + c1, c2), truncmod(x, c2),
              c2 > 0 && c1 % c2 == 0 && can_prove(x >= 0) && can_prove(x + c1 >= 0))) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

}  // namespace kiln::arith
