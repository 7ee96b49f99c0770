// Rewrite rules for Mul: constants move right and fold, and a constant factor distributes over
// a sum with a constant.
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

Expr RewriteSimplifier::visit(const Mul* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  if (!e.is<Mul>() || !is_scalar_integer(e)) return e;
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  // Identities of the ring, true modulo 2^bits. Expressions have no side effects, so x * 0
  // may drop x.
  if (rewrite(x * 1, x) || rewrite(1 * x, x) || rewrite(x * 0, 0) || rewrite(0 * x, 0)) {
    return rewrite.result();
  }
  if (!is_index(e)) return e;

  // clang-format off
  if (rewrite(c1 * x, x * c1) ||
      rewrite((x * c1) * c2, x * fold(c1 * c2)) ||
      rewrite((x + c1) * c2, x * c2 + fold(c1 * c2)) ||
      rewrite((x - c1) * c2, x * c2 - fold(c1 * c2)) ||
      rewrite((c1 - x) * c2, fold(c1 * c2) - x * c2) ||
      rewrite((x * c1) * y, (x * y) * c1) ||
      rewrite(x * (y * c1), (x * y) * c1) ||
      rewrite((0 - x) * y, 0 - x * y) ||
      rewrite(x * (0 - y), 0 - x * y)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

}  // namespace kiln::arith
