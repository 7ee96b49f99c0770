// Rewrite rules for vector expressions: arithmetic on broadcasts happens on their scalars,
// ramps absorb additions and constant factors, and division and remainder of a ramp by a
// constant become a broadcast or a ramp when every lane shares the quotient or the remainder's
// structure (`ramp(x*4, 1, 4) // 4` is `broadcast(x, 4)`).
#include <numeric>

#include "src/arith/int_math.h"
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;

namespace {

// The scalar operation of a binary node kind, built with the op.h builders.
Expr build_scalar(NodeKind kind, const Expr& a, const Expr& b) {
  switch (kind) {
    case NodeKind::Add:
      return add(a, b);
    case NodeKind::Sub:
      return sub(a, b);
    case NodeKind::Mul:
      return mul(a, b);
    case NodeKind::Div:
      return a->dtype.is_float() ? div(a, b) : truncdiv(a, b);
    case NodeKind::Mod:
      return truncmod(a, b);
    case NodeKind::FloorDiv:
      return floordiv(a, b);
    case NodeKind::FloorMod:
      return floormod(a, b);
    case NodeKind::Min:
      return min(a, b);
    case NodeKind::Max:
      return max(a, b);
    case NodeKind::EQ:
      return eq(a, b);
    case NodeKind::NE:
      return ne(a, b);
    case NodeKind::LT:
      return lt(a, b);
    case NodeKind::LE:
      return le(a, b);
    case NodeKind::GT:
      return gt(a, b);
    case NodeKind::GE:
      return ge(a, b);
    case NodeKind::And:
      return logical_and(a, b);
    default:
      return logical_or(a, b);
  }
}

bool is_binary(NodeKind kind) {
  switch (kind) {
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Min:
    case NodeKind::Max:
    case NodeKind::EQ:
    case NodeKind::NE:
    case NodeKind::LT:
    case NodeKind::LE:
    case NodeKind::GT:
    case NodeKind::GE:
    case NodeKind::And:
    case NodeKind::Or:
      return true;
    default:
      return false;
  }
}

}  // namespace

Expr RewriteSimplifier::rewrite_vector(const Expr& e) {
  NodeKind kind = e->kind();
  if (!is_binary(kind)) return e;
  const auto* op = static_cast<const BinaryNode*>(e.get());
  const Expr& a = op->a;
  const Expr& b = op->b;
  int lanes = e->dtype.lanes();
  // Step 1. Two broadcasts: the operation on their scalars, broadcast.
  const auto* ba = a.as<Broadcast>();
  const auto* bb = b.as<Broadcast>();
  if (ba != nullptr && bb != nullptr) {
    return broadcast(resimplify(build_scalar(kind, ba->value, bb->value)), lanes);
  }
  // Step 2. A result that the bounds of all lanes decide.
  if (e->dtype.is_int() || e->dtype.is_bool()) {
    ConstIntBound r = bound(e);
    if (r.is_single() && r.min_value != kNegInf && r.min_value != kPosInf) {
      return make_const(e->dtype, r.min_value);
    }
  }
  if (!e->dtype.is_int()) return e;
  const auto* ra = a.as<Ramp>();
  const auto* rb = b.as<Ramp>();
  // Step 3. Ramps absorb sums and constant factors.
  switch (kind) {
    case NodeKind::Add:
      if (ra != nullptr && rb != nullptr) {
        return resimplify(ramp(add(ra->base, rb->base), add(ra->stride, rb->stride), lanes));
      }
      if (ra != nullptr && bb != nullptr) {
        return resimplify(ramp(add(ra->base, bb->value), ra->stride, lanes));
      }
      if (ba != nullptr && rb != nullptr) {
        return resimplify(ramp(add(ba->value, rb->base), rb->stride, lanes));
      }
      return e;
    case NodeKind::Sub:
      if (ra != nullptr && rb != nullptr) {
        return resimplify(ramp(sub(ra->base, rb->base), sub(ra->stride, rb->stride), lanes));
      }
      if (ra != nullptr && bb != nullptr) {
        return resimplify(ramp(sub(ra->base, bb->value), ra->stride, lanes));
      }
      if (ba != nullptr && rb != nullptr) {
        return resimplify(ramp(sub(ba->value, rb->base), neg(rb->stride), lanes));
      }
      return e;
    case NodeKind::Mul:
      if (ra != nullptr && bb != nullptr) {
        return resimplify(ramp(mul(ra->base, bb->value), mul(ra->stride, bb->value), lanes));
      }
      if (ba != nullptr && rb != nullptr) {
        return resimplify(ramp(mul(ba->value, rb->base), mul(ba->value, rb->stride), lanes));
      }
      return e;
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
      break;
    default:
      return e;
  }
  // Step 4. ramp(base, s, n) // c and % c for constants s and c > 0.
  if (ra == nullptr || bb == nullptr) return e;
  const int64_t* s = as_const_int(ra->stride);
  const int64_t* c = as_const_int(bb->value);
  if (s == nullptr || c == nullptr || *c <= 0) return e;
  bool is_div = kind == NodeKind::FloorDiv;
  Expr base = ra->base;
  // floordiv(base + s*l, c) == floordiv(base, c) + (s / c)*l when c divides s.
  if (*s % *c == 0) {
    if (!is_div) return resimplify(broadcast(floormod(base, bb->value), lanes));
    return resimplify(ramp(floordiv(base, bb->value), make_const(base->dtype, *s / *c), lanes));
  }
  // Every lane in one period of c: base = coeff*k + b, so base mod c is b mod g plus a multiple
  // of g = gcd(coeff, c) (g = c for a constant base); no lane crosses a multiple of c when
  // (b mod g) + s*(n-1) < g (`ramp(i*8 + 64, 1, 8) % 128` is `ramp((i*8 + 64) % 128, 1, 8)`).
  ModularSet m = impl_->modular(base);
  std::optional<int64_t> last = checked_mul(*s, lanes - 1);
  if (*s >= 0 && last && m.coeff >= 0) {
    int64_t g = std::gcd(m.coeff, *c);
    int64_t r = floormod_int(m.base, g);
    std::optional<int64_t> top = checked_add(r, *last);
    if (top && *top < g) {
      if (is_div) return resimplify(broadcast(floordiv(base, bb->value), lanes));
      return resimplify(ramp(floormod(base, bb->value), ra->stride, lanes));
    }
  }
  return e;
}

}  // namespace kiln::arith
