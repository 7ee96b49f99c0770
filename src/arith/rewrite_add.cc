// Rewrite rules for Add and Sub: constants move right and fold, equal terms combine, and
// splits recombine (floordiv(x, c)*c + floormod(x, c) is x).
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

Expr RewriteSimplifier::visit(const Add* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  if (!e.is<Add>() || !is_scalar_integer(e)) return e;
  PVar x, y, z;
  PConst c1, c2;
  Rewriter rewrite(e);
  // Identities of the ring, true modulo 2^bits.
  if (rewrite(x + 0, x) || rewrite(0 + x, x)) return rewrite.result();
  if (!is_index(e)) return e;

  // clang-format off
  if (rewrite(c1 + x, x + c1) ||
      rewrite(x + c1, x - fold(0 - c1), c1 < 0) ||
      rewrite((x + c1) + c2, x + fold(c1 + c2)) ||
      rewrite((x - c1) + c2, x + fold(c2 - c1)) ||
      rewrite((c1 - x) + c2, fold(c1 + c2) - x) ||
      rewrite(x + (0 - y), x - y) ||
      rewrite((0 - x) + y, y - x) ||
      rewrite((x - y) + y, x) ||
      rewrite(y + (x - y), x) ||
      rewrite(x + x, x * 2) ||
      rewrite(x * c1 + x, x * fold(c1 + 1)) ||
      rewrite(x + x * c1, x * fold(c1 + 1)) ||
      rewrite(x * c1 + x * c2, x * fold(c1 + c2)) ||
      rewrite((x + c1) + y, (x + y) + c1) ||
      rewrite((x - c1) + y, (x + y) - c1) ||
      rewrite(x + (y + c1), (x + y) + c1) ||
      rewrite(x + (y - c1), (x + y) - c1) ||
      rewrite((c1 - x) + y, (y - x) + c1) ||
      rewrite(x + (c1 - y), (x - y) + c1) ||
      rewrite(floordiv(x, c1) * c1 + floormod(x, c1), x, c1 != 0) ||
      rewrite(floormod(x, c1) + floordiv(x, c1) * c1, x, c1 != 0) ||
      rewrite(truncdiv(x, c1) * c1 + truncmod(x, c1), x, c1 != 0) ||
      rewrite(truncmod(x, c1) + truncdiv(x, c1) * c1, x, c1 != 0) ||
      rewrite(min(x, y) + max(x, y), x + y) ||
      rewrite(min(x, y) + max(y, x), x + y) ||
      rewrite(max(x, y) + min(x, y), x + y) ||
      rewrite(max(x, y) + min(y, x), x + y) ||
      rewrite(select(z, x, y) + select(z, y, x), x + y)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

Expr RewriteSimplifier::visit(const Sub* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  if (!e.is<Sub>() || !is_scalar_integer(e)) return e;
  PVar x, y;
  PConst c1, c2;
  Rewriter rewrite(e);
  if (rewrite(x - x, 0) || rewrite(x - 0, x)) return rewrite.result();
  if (!is_index(e)) return e;

  // clang-format off
  if (rewrite(x - c1, x + fold(0 - c1), c1 < 0) ||
      rewrite((x + y) - y, x) ||
      rewrite((x + y) - x, y) ||
      rewrite(x - (x + y), 0 - y) ||
      rewrite(y - (x + y), 0 - x) ||
      rewrite(x - (x - y), y) ||
      rewrite((x - y) - x, 0 - y) ||
      rewrite((x + c1) - c2, x + fold(c1 - c2)) ||
      rewrite((x - c1) - c2, x - fold(c1 + c2)) ||
      rewrite((c1 - x) - c2, fold(c1 - c2) - x) ||
      rewrite(c1 - (x + c2), fold(c1 - c2) - x) ||
      rewrite(c1 - (x - c2), fold(c1 + c2) - x) ||
      rewrite(c1 - (c2 - x), x + fold(c1 - c2)) ||
      rewrite((x + c1) - (y + c2), (x - y) + fold(c1 - c2)) ||
      rewrite((x + c1) - y, (x - y) + c1) ||
      rewrite((x - c1) - y, (x - y) - c1) ||
      rewrite(x - (y + c1), (x - y) - c1) ||
      rewrite(x - (y - c1), (x - y) + c1) ||
      rewrite(x * c1 - x, x * fold(c1 - 1)) ||
      rewrite(x - x * c1, x * fold(1 - c1)) ||
      rewrite(x * c1 - x * c2, x * fold(c1 - c2)) ||
      rewrite(x - floordiv(x, c1) * c1, floormod(x, c1), c1 != 0) ||
      rewrite(x - floormod(x, c1), floordiv(x, c1) * c1, c1 != 0) ||
      rewrite(x - truncdiv(x, c1) * c1, truncmod(x, c1), c1 != 0) ||
      rewrite(x - truncmod(x, c1), truncdiv(x, c1) * c1, c1 != 0) ||
      rewrite(max(x, y) - y, max(x - y, 0)) ||
      rewrite(max(x, y) - x, max(y - x, 0)) ||
      rewrite(min(x, y) - y, min(x - y, 0)) ||
      rewrite(min(x, y) - x, min(y - x, 0)) ||
      rewrite(x - max(x, y), min(x - y, 0)) ||
      rewrite(y - max(x, y), min(y - x, 0)) ||
      rewrite(x - min(x, y), max(x - y, 0)) ||
      rewrite(y - min(x, y), max(y - x, 0))) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

}  // namespace kiln::arith
