// Rewrite rules for Min and Max: an operand proved to be the smaller (larger) one is the
// result; nested min/max of shared operands collapse; common offsets and positive factors
// move out.
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

Expr RewriteSimplifier::visit(const Min* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* m = e.as<Min>();
  if (m == nullptr || !is_scalar_integer(e)) return e;
  // Bounds are sound for unsigned integers too.
  if (prove_le(m->a, m->b)) return m->a;
  if (prove_le(m->b, m->a)) return m->b;
  if (!is_index(e)) return e;
  PVar x, y, z;
  PConst c1, c2;
  Rewriter rewrite(e);
  // clang-format off
  if (rewrite(min(c1, x), min(x, c1)) ||
      rewrite(min(min(x, y), x), min(x, y)) ||
      rewrite(min(min(x, y), y), min(x, y)) ||
      rewrite(min(x, min(x, y)), min(x, y)) ||
      rewrite(min(y, min(x, y)), min(x, y)) ||
      rewrite(min(max(x, y), x), x) ||
      rewrite(min(max(x, y), y), y) ||
      rewrite(min(x, max(x, y)), x) ||
      rewrite(min(y, max(x, y)), y) ||
      rewrite(min(min(x, c1), c2), min(x, fold(min(c1, c2)))) ||
      rewrite(min(max(x, c1), c2), max(min(x, c2), c1), c1 <= c2) ||
      rewrite(min(x + c1, c2), min(x, fold(c2 - c1)) + c1) ||
      rewrite(min(x - c1, c2), min(x, fold(c2 + c1)) - c1) ||
      rewrite(min(x + z, y + z), min(x, y) + z) ||
      rewrite(min(z + x, z + y), min(x, y) + z) ||
      rewrite(min(x + z, z + y), min(x, y) + z) ||
      rewrite(min(z + x, y + z), min(x, y) + z) ||
      rewrite(min(x - z, y - z), min(x, y) - z) ||
      rewrite(min(z - x, z - y), z - max(x, y)) ||
      rewrite(min(x * c1, y * c1), min(x, y) * c1, c1 > 0) ||
      rewrite(min(x * c1, y * c1), max(x, y) * c1, c1 < 0) ||
      rewrite(min(x * c1, c2), min(x, fold(c2 / c1)) * c1, c1 > 0 && c2 % c1 == 0) ||
      rewrite(min(floordiv(x, c1), floordiv(y, c1)), floordiv(min(x, y), c1), c1 > 0) ||
      rewrite(min(floordiv(x, c1), floordiv(y, c1)), floordiv(max(x, y), c1), c1 < 0) ||
      rewrite(min(select(z, x, y), select(z, c1, c2)), select(z, min(x, c1), min(y, c2)))) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

Expr RewriteSimplifier::visit(const Max* op) {
  Expr e = rebuild(op, mutate(op->a), mutate(op->b));
  if (e->dtype.is_vector()) return rewrite_vector(e);
  const auto* m = e.as<Max>();
  if (m == nullptr || !is_scalar_integer(e)) return e;
  if (prove_le(m->b, m->a)) return m->a;
  if (prove_le(m->a, m->b)) return m->b;
  if (!is_index(e)) return e;
  PVar x, y, z;
  PConst c1, c2;
  Rewriter rewrite(e);
  // clang-format off
  if (rewrite(max(c1, x), max(x, c1)) ||
      rewrite(max(max(x, y), x), max(x, y)) ||
      rewrite(max(max(x, y), y), max(x, y)) ||
      rewrite(max(x, max(x, y)), max(x, y)) ||
      rewrite(max(y, max(x, y)), max(x, y)) ||
      rewrite(max(min(x, y), x), x) ||
      rewrite(max(min(x, y), y), y) ||
      rewrite(max(x, min(x, y)), x) ||
      rewrite(max(y, min(x, y)), y) ||
      rewrite(max(max(x, c1), c2), max(x, fold(max(c1, c2)))) ||
      rewrite(max(x + c1, c2), max(x, fold(c2 - c1)) + c1) ||
      rewrite(max(x - c1, c2), max(x, fold(c2 + c1)) - c1) ||
      rewrite(max(x + z, y + z), max(x, y) + z) ||
      rewrite(max(z + x, z + y), max(x, y) + z) ||
      rewrite(max(x + z, z + y), max(x, y) + z) ||
      rewrite(max(z + x, y + z), max(x, y) + z) ||
      rewrite(max(x - z, y - z), max(x, y) - z) ||
      rewrite(max(z - x, z - y), z - min(x, y)) ||
      rewrite(max(x * c1, y * c1), max(x, y) * c1, c1 > 0) ||
      rewrite(max(x * c1, y * c1), min(x, y) * c1, c1 < 0) ||
      rewrite(max(x * c1, c2), max(x, fold(c2 / c1)) * c1, c1 > 0 && c2 % c1 == 0) ||
      rewrite(max(floordiv(x, c1), floordiv(y, c1)), floordiv(max(x, y), c1), c1 > 0) ||
      rewrite(max(floordiv(x, c1), floordiv(y, c1)), floordiv(min(x, y), c1), c1 < 0) ||
      rewrite(max(select(z, x, y), select(z, c1, c2)), select(z, max(x, c1), max(y, c2)))) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

}  // namespace kiln::arith
