// Rewrite rules for And, Or and Not. Each operand of And is simplified knowing that the other
// holds (if it does not, the result is false anyway), each operand of Or knowing that the other
// does not; negations move inward onto comparisons.
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

namespace {

bool is_const(const Expr& e) {
  return e.is<IntImm>();
}

// A comparison whose negation is the opposite comparison (not for floats, where NaN makes
// both a < b and b <= a false).
bool negates_exactly(const Expr& e) {
  const Expr* a = nullptr;
  if (const auto* n = e.as<LT>()) a = &n->a;
  if (const auto* n = e.as<LE>()) a = &n->a;
  if (const auto* n = e.as<GT>()) a = &n->a;
  if (const auto* n = e.as<GE>()) a = &n->a;
  return a != nullptr && !(*a)->dtype.is_float();
}

}  // namespace

Expr RewriteSimplifier::visit(const Not* op) {
  Expr a = mutate(op->a);
  Expr e = a.same_as(op->a) && !is_const(a) ? Expr(op) : logical_not(a);
  if (!e.is<Not>() || !e->dtype.is_scalar()) return e;
  PVar x, y;
  Rewriter rewrite(e);
  if (rewrite(!!x, x)) return rewrite.result();
  // Comparisons negate exactly except on floats (NaN).
  bool exact = negates_exactly(e.as<Not>()->a);
  // clang-format off
  if ((exact && rewrite(!(x < y), y <= x)) ||
      (exact && rewrite(!(x <= y), y < x)) ||
      (exact && rewrite(!(x > y), x <= y)) ||
      (exact && rewrite(!(x >= y), x < y)) ||
      rewrite(!(x == y), x != y) ||
      rewrite(!(x != y), x == y) ||
      rewrite(!(x && y), !x || !y) ||
      rewrite(!(x || y), !x && !y)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return decide_by_facts(e);
}

Expr RewriteSimplifier::visit(const And* op) {
  Expr a = mutate(op->a);
  Expr b = mutate_assuming(op->b, a);
  // Once more for a, knowing b (only for an atom, so that chains stay linear).
  if (!is_const(b) && !is_const(a) && !a.is<And>()) a = mutate_assuming(a, b);
  Expr e = a.same_as(op->a) && b.same_as(op->b) && !is_const(a) && !is_const(b) ? Expr(op)
                                                                                : logical_and(a, b);
  if (e->dtype.is_vector()) return rewrite_vector(e);
  if (!e.is<And>() || !e->dtype.is_scalar()) return e;
  PVar x;
  Rewriter rewrite(e);
  if (rewrite(x && x, x) || rewrite(x && !x, false) || rewrite(!x && x, false)) {
    return rewrite.result();
  }
  return decide_by_facts(e);
}

Expr RewriteSimplifier::visit(const Or* op) {
  Expr a = mutate(op->a);
  Expr b = mutate_assuming(op->b, negation(a));
  if (!is_const(b) && !is_const(a) && !a.is<Or>()) a = mutate_assuming(a, negation(b));
  Expr e = a.same_as(op->a) && b.same_as(op->b) && !is_const(a) && !is_const(b) ? Expr(op)
                                                                                : logical_or(a, b);
  if (e->dtype.is_vector()) return rewrite_vector(e);
  if (!e.is<Or>() || !e->dtype.is_scalar()) return e;
  PVar x;
  Rewriter rewrite(e);
  if (rewrite(x || x, x) || rewrite(x || !x, true) || rewrite(!x || x, true)) {
    return rewrite.result();
  }
  return decide_by_facts(e);
}

}  // namespace kiln::arith
