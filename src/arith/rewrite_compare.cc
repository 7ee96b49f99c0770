// Rewrite rules for comparisons. A comparison of signed integers a < b is decided, when it
// can be, from the canonical difference d = a - b: its bound, its modular set and the known
// facts. Otherwise it is put in a normal form: d divided by the gcd of its scales, terms with
// positive scales on the left, negative ones on the right, the constant on the side that keeps
// it positive (`x*2 + 4 < y*2 + 2` becomes `x + 1 < y`). GT and GE become LT and LE.
#include "src/arith/canonical_simplify.h"
#include "src/arith/int_math.h"
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

namespace {

bool decide_const(NodeKind kind, int64_t d) {
  switch (kind) {
    case NodeKind::LT:
      return d < 0;
    case NodeKind::LE:
      return d <= 0;
    case NodeKind::EQ:
      return d == 0;
    default:
      return d != 0;
  }
}

Expr build_compare(NodeKind kind, const Expr& a, const Expr& b) {
  switch (kind) {
    case NodeKind::LT:
      return make<LT>(DataType::bool_(), a, b);
    case NodeKind::LE:
      return make<LE>(DataType::bool_(), a, b);
    case NodeKind::EQ:
      return make<EQ>(DataType::bool_(), a, b);
    default:
      return make<NE>(DataType::bool_(), a, b);
  }
}

bool fits(int64_t v, DataType t) {
  return wrap_to_dtype(v, t) == v;
}

}  // namespace

Expr RewriteSimplifier::compare_index(NodeKind kind, const Expr& a, const Expr& b) {
  DataType t = a->dtype;
  LinearSum d = canonical_sum(impl_, sub(a, b));
  // Step 1. Decide from the constant, the bound, the modular set and the facts.
  if (d.terms.empty()) return bool_const(decide_const(kind, d.base));
  Expr de = linear_expr(d);
  ConstIntBound bd = bound(de);
  bool equality = kind == NodeKind::EQ || kind == NodeKind::NE;
  if (kind == NodeKind::LT) {
    if (bd.max_value < 0) return bool_const(true);
    if (bd.min_value >= 0) return bool_const(false);
  } else if (kind == NodeKind::LE) {
    if (bd.max_value <= 0) return bool_const(true);
    if (bd.min_value > 0) return bool_const(false);
  } else {
    bool zero_excluded = bd.min_value > 0 || bd.max_value < 0;
    ModularSet m = impl_->modular(de);
    zero_excluded = zero_excluded || (m.coeff != 0 && m.base != 0);
    if (zero_excluded) return bool_const(kind == NodeKind::NE);
  }
  if (!impl_->facts.empty()) {
    Expr one = make_one(t);
    Expr neg = sub(make_zero(t), de);
    if (kind == NodeKind::LT) {
      if (impl_->prove_nonneg(sub(neg, one))) return bool_const(true);
      if (impl_->prove_nonneg(de)) return bool_const(false);
    } else if (kind == NodeKind::LE) {
      if (impl_->prove_nonneg(neg)) return bool_const(true);
      if (impl_->prove_nonneg(sub(de, one))) return bool_const(false);
    } else {
      if (impl_->prove_nonneg(sub(de, one)) || impl_->prove_nonneg(sub(neg, one))) {
        return bool_const(kind == NodeKind::NE);
      }
      if (impl_->prove_nonneg(de) && impl_->prove_nonneg(neg)) {
        return bool_const(kind == NodeKind::EQ);
      }
    }
  }
  // Step 2. Divide by the gcd g of the scales: g*q + k < 0  <=>  q < ceil(-k / g), and so on.
  int64_t g = 0;
  for (const auto& term : d.terms) {
    std::optional<int64_t> next = gcd_int(g, term.second);
    if (!next) return nullptr;
    g = *next;
  }
  std::optional<int64_t> neg_k = checked_neg(d.base);
  if (!neg_k) return nullptr;
  int64_t m;
  if (kind == NodeKind::LT) {
    // ceil(p / g) == -floor(-p / g)
    std::optional<int64_t> c = checked_neg(floordiv_int(d.base, g));
    if (!c) return nullptr;
    m = *c;
  } else if (kind == NodeKind::LE) {
    m = floordiv_int(*neg_k, g);
  } else {
    if (d.base % g != 0) return bool_const(kind == NodeKind::NE);
    m = *neg_k / g;
  }
  // An equality reads the same with both sides negated: keep the first term positive.
  bool flip = equality && d.terms[0].second < 0;
  LinearSum left{t, {}, 0}, right{t, {}, 0};
  for (const auto& [term, scale] : d.terms) {
    int64_t s = (flip ? -scale : scale) / g;
    if (s > 0) {
      left.terms.emplace_back(term, s);
    } else {
      right.terms.emplace_back(term, -s);
    }
  }
  if (flip) m = -m;
  // Step 3. Place the constant: q < m is left < right + m. Between two sums, left < right + 1
  // reads better as left <= right, and left + 1 <= right as left < right.
  if (!left.terms.empty() && !right.terms.empty()) {
    if (kind == NodeKind::LT && m == 1) {
      kind = NodeKind::LE;
      m = 0;
    } else if (kind == NodeKind::LE && m == -1) {
      kind = NodeKind::LT;
      m = 0;
    }
  }
  Expr lhs, rhs;
  if (right.terms.empty()) {
    left.base = 0;
    lhs = linear_expr(left);
    if (!fits(m, t)) return nullptr;
    rhs = make_const(t, m);
  } else if (left.terms.empty()) {
    // -right < m  <=>  -m < right (and -right == m  <=>  right == -m).
    std::optional<int64_t> neg_m = checked_neg(m);
    if (!neg_m || !fits(*neg_m, t)) return nullptr;
    if (equality) {
      lhs = linear_expr(right);
      rhs = make_const(t, *neg_m);
    } else {
      lhs = make_const(t, *neg_m);
      rhs = linear_expr(right);
    }
  } else {
    if (m > 0) {
      right.base = m;
    } else if (m < 0) {
      std::optional<int64_t> neg_m = checked_neg(m);
      if (!neg_m) return nullptr;
      left.base = *neg_m;
    }
    if (!fits(left.base, t) || !fits(right.base, t)) return nullptr;
    lhs = linear_expr(left);
    rhs = linear_expr(right);
  }
  Expr r = build_compare(kind, lhs, rhs);
  // Step 4. Rules on the normal form.
  PVar x;
  PConst c1, c2;
  Rewriter rewrite(r);
  // clang-format off
  if (rewrite(floordiv(x, c1) < c2, x < fold(c1 * c2), c1 > 0) ||
      rewrite(c1 < floordiv(x, c2), fold((c1 + 1) * c2 - 1) < x, c2 > 0) ||
      rewrite(floordiv(x, c1) <= c2, x <= fold((c2 + 1) * c1 - 1), c1 > 0) ||
      rewrite(c1 <= floordiv(x, c2), fold(c1 * c2) <= x, c2 > 0)) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return r;
}

namespace {

// Float constants compare exactly (NaN compares false except with !=).
Expr fold_float_compare(NodeKind kind, const Expr& a, const Expr& b) {
  const auto* fa = a.as<FloatImm>();
  const auto* fb = b.as<FloatImm>();
  if (fa == nullptr || fb == nullptr) return nullptr;
  double x = fa->value, y = fb->value;
  switch (kind) {
    case NodeKind::EQ:
      return bool_const(x == y);
    case NodeKind::NE:
      return bool_const(x != y);
    case NodeKind::LT:
      return bool_const(x < y);
    case NodeKind::LE:
      return bool_const(x <= y);
    case NodeKind::GT:
      return bool_const(x > y);
    default:
      return bool_const(x >= y);
  }
}

}  // namespace

// The shared tail of the comparison visitors: `kind` is the node's own kind; `swap` says that
// the normal form compares b with a (GT, GE).
#define KILN_REWRITE_COMPARE(Name, NormalKind, swap)                             \
  Expr RewriteSimplifier::visit(const Name* op) {                                \
    Expr a = mutate(op->a), b = mutate(op->b);                                   \
    Expr e = rebuild(op, a, b);                                                  \
    if (!e.is<Name>()) return e;                                                 \
    if (Expr f = fold_float_compare(NodeKind::Name, a, b)) return f;             \
    if (!a->dtype.is_scalar()) return rewrite_vector(e);                         \
    Expr r;                                                                      \
    if (is_index(a)) {                                                           \
      r = swap ? compare_index(NodeKind::NormalKind, b, a)                       \
               : compare_index(NodeKind::NormalKind, a, b);                      \
    } else if (a->dtype.is_integer() || a->dtype.is_bool()) {                    \
      /* Bounds are sound for every integer type and decide some comparisons. */ \
      ConstIntBound decided = bound(e);                                          \
      if (decided.is_single()) r = bool_const(decided.min_value != 0);           \
    }                                                                            \
    if (!r.defined()) r = compare_other(NodeKind::Name, e);                      \
    r = decide_by_facts(r);                                                      \
    return deep_equal(r, Expr(op)) ? Expr(op) : r;                               \
  }

namespace {
// Rules for comparisons of bools and other non-index operands.
Expr compare_other(NodeKind kind, const Expr& e) {
  const auto* bin = static_cast<const BinaryNode*>(e.get());
  const Expr& a = bin->a;
  const Expr& b = bin->b;
  if (a->dtype.is_float()) return e;  // x == x is false for NaN
  if (deep_equal(a, b)) {
    return bool_const(kind == NodeKind::EQ || kind == NodeKind::LE || kind == NodeKind::GE);
  }
  if (a->dtype.is_bool() && (kind == NodeKind::EQ || kind == NodeKind::NE)) {
    const int64_t* ca = as_const_int(a);
    const int64_t* cb = as_const_int(b);
    const Expr& other = ca != nullptr ? b : a;
    const int64_t* c = ca != nullptr ? ca : cb;
    if (c != nullptr) {
      bool same = (*c != 0) == (kind == NodeKind::EQ);
      return same ? other : logical_not(other);
    }
  }
  return e;
}
}  // namespace

KILN_REWRITE_COMPARE(LT, LT, false)
KILN_REWRITE_COMPARE(LE, LE, false)
KILN_REWRITE_COMPARE(GT, LT, true)
KILN_REWRITE_COMPARE(GE, LE, true)
KILN_REWRITE_COMPARE(EQ, EQ, false)
KILN_REWRITE_COMPARE(NE, NE, false)
#undef KILN_REWRITE_COMPARE

}  // namespace kiln::arith
