// The canonical simplifier: signed integer index expressions become sums of scaled split
// terms, floordiv(floormod(index, upper), lower) * scale, plus a constant. Equal terms merge,
// adjacent splits of one index merge back (floordiv(x, 4)*4 + floormod(x, 4) is x), and
// division and remainder by constants distribute over the parts of a sum that they divide,
// deciding the rest with integer bounds ((x*4 + y) // 4 is x when 0 <= y < 4).
#include <algorithm>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "src/arith/canonical_simplify.h"
#include "src/arith/expr_compare.h"
#include "src/arith/int_math.h"

namespace kiln::arith {

using namespace ir;

namespace {

// floordiv(floormod(index, upper), lower) * scale; upper == kPosInf means no floormod.
// lower >= 1 and upper > lower.
struct Term {
  Expr index;
  int64_t lower = 1;
  int64_t upper = kPosInf;
  int64_t scale = 1;

  bool same_split(const Term& other) const {
    return lower == other.lower && upper == other.upper && deep_equal(index, other.index);
  }
};

struct Sum {
  DataType dtype;
  std::vector<Term> terms;
  int64_t base = 0;
};

bool is_index_type(DataType t) {
  return t.is_int() && t.is_scalar();
}

bool divides(int64_t d, int64_t n) {
  return n == kPosInf || (d != 0 && n % d == 0);
}

// Two splits of one index that add up to one split, or nothing. See the three identities in
// the comments; `y` stands for floormod(x, u) of the larger upper u.
std::optional<Term> merge_splits(const Term& a, const Term& b) {
  if (!deep_equal(a.index, b.index)) return std::nullopt;
  // floordiv(floormod(x, l2), l1) * s + floordiv(floormod(x, u), l2) * s * (l2 / l1)
  //   = floordiv(floormod(x, u), l1) * s             when l1 | l2 | u.
  if (a.upper == b.lower && divides(a.lower, b.lower) && divides(b.lower, b.upper)) {
    std::optional<int64_t> want = checked_mul(a.scale, b.lower / a.lower);
    if (want && *want == b.scale) return Term{a.index, a.lower, b.upper, a.scale};
  }
  // floordiv(y, l1) * s - floordiv(y, l2) * s * (l2 / l1) = floordiv(floormod(x, l2), l1) * s
  //   when l1 | l2 | u.
  if (a.upper == b.upper && a.lower < b.lower && divides(a.lower, b.lower) &&
      divides(b.lower, b.upper)) {
    std::optional<int64_t> want = checked_mul(a.scale, b.lower / a.lower);
    std::optional<int64_t> neg = want ? checked_neg(*want) : std::nullopt;
    if (neg && *neg == b.scale) return Term{a.index, a.lower, b.lower, a.scale};
  }
  // floordiv(floormod(x, u1), l) * s - floordiv(floormod(x, u2), l) * s
  //   = floordiv(floormod(x, u2), u1) * -s * (u1 / l)   when l | u1 | u2.
  if (a.lower == b.lower && a.upper < b.upper && divides(a.lower, a.upper) &&
      divides(a.upper, b.upper)) {
    std::optional<int64_t> neg = checked_neg(a.scale);
    if (neg && *neg == b.scale) {
      std::optional<int64_t> scale = checked_mul(b.scale, a.upper / a.lower);
      if (scale) return Term{a.index, a.upper, b.upper, *scale};
    }
  }
  return std::nullopt;
}

class Canonicalizer : public IRMutator {
 public:
  explicit Canonicalizer(Analyzer::Impl* impl) : impl_(impl) {}
  using IRMutator::mutate;

  // The sum of a scalar signed integer expression.
  Sum to_sum(const Expr& e) {
    DataType t = e->dtype;
    if (const auto* imm = e.as<IntImm>()) return constant(t, imm->value);
    switch (e->kind()) {
      case NodeKind::Add: {
        const auto* op = e.as<Add>();
        return add(to_sum(op->a), to_sum(op->b));
      }
      case NodeKind::Sub: {
        const auto* op = e.as<Sub>();
        return add(to_sum(op->a), scale(to_sum(op->b), -1));
      }
      case NodeKind::Mul: {
        const auto* op = e.as<Mul>();
        return multiply(to_sum(op->a), to_sum(op->b));
      }
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod:
      case NodeKind::Div:
      case NodeKind::Mod: {
        const auto* op = static_cast<const BinaryNode*>(e.get());
        Sum a = to_sum(op->a), b = to_sum(op->b);
        if (b.terms.empty() && b.base != 0) return divide(e->kind(), a, b.base);
        return leaf(rebuild(e->kind(), t, to_expr(a), to_expr(b)));
      }
      case NodeKind::Var: {
        const VarInfo* info = impl_->find(e.as<Var>());
        if (info != nullptr && info->value.defined() && info->value->dtype == t) {
          return to_sum(info->value);
        }
        return leaf(e);
      }
      default:
        return leaf(mutate(e));
    }
  }

  Expr to_expr(const Sum& s) {
    LinearSum linear{s.dtype, {}, s.base};
    for (const Term& t : s.terms) linear.terms.emplace_back(split_expr(t, s.dtype), t.scale);
    return linear_expr(linear);
  }

 protected:
  using IRMutator::visit;
#define KILN_CANONICAL_VISIT(Name)                              \
  Expr visit(const Name* op) override {                         \
    if (!is_index_type(op->dtype)) return IRMutator::visit(op); \
    Expr e(op);                                                 \
    Expr r = to_expr(to_sum(e));                                \
    return deep_equal(r, e) ? e : r;                            \
  }
  KILN_CANONICAL_VISIT(Add)
  KILN_CANONICAL_VISIT(Sub)
  KILN_CANONICAL_VISIT(Mul)
  KILN_CANONICAL_VISIT(FloorDiv)
  KILN_CANONICAL_VISIT(FloorMod)
  KILN_CANONICAL_VISIT(Div)
  KILN_CANONICAL_VISIT(Mod)
#undef KILN_CANONICAL_VISIT

  Expr visit(const Var* op) override {
    const VarInfo* info = impl_->find(op);
    if (info != nullptr && info->value.defined() && info->value->dtype == op->dtype) {
      return info->value;
    }
    return op;
  }

 private:
  int64_t wrap(DataType t, int64_t v) const {
    return wrap_to_dtype(v, t);
  }

  static Sum constant(DataType t, int64_t value) {
    return Sum{t, {}, value};
  }
  static Sum leaf(const Expr& e) {
    return Sum{e->dtype, {Term{e}}, 0};
  }

  static Expr rebuild(NodeKind kind, DataType t, Expr a, Expr b) {
    switch (kind) {
      case NodeKind::FloorDiv:
        return make<FloorDiv>(t, a, b);
      case NodeKind::FloorMod:
        return make<FloorMod>(t, a, b);
      case NodeKind::Div:
        return make<Div>(t, a, b);
      default:
        return make<Mod>(t, a, b);
    }
  }

  // The expression of an unscaled split term.
  static Expr split_expr(const Term& t, DataType dtype) {
    Expr e = t.index;
    if (t.upper != kPosInf) {
      if (t.lower > 1 && t.upper % t.lower == 0) {
        e = make<FloorDiv>(dtype, e, make_const(dtype, t.lower));
        return make<FloorMod>(dtype, e, make_const(dtype, t.upper / t.lower));
      }
      e = make<FloorMod>(dtype, e, make_const(dtype, t.upper));
    }
    if (t.lower > 1) e = make<FloorDiv>(dtype, e, make_const(dtype, t.lower));
    return e;
  }

  // ------------------------------------------------------------------------------------------
  // Ring operations. Scales and constants wrap to the dtype like the arithmetic they stand for.

  void add_term(Sum* s, Term t) {
    for (size_t i = 0; i < s->terms.size(); ++i) {
      if (s->terms[i].same_split(t)) {
        s->terms[i].scale = wrap(s->dtype, wrapping_add(s->terms[i].scale, t.scale));
        if (s->terms[i].scale == 0) {
          s->terms.erase(s->terms.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          merge_with_others(s, i);
        }
        return;
      }
    }
    if (t.scale == 0) return;
    s->terms.push_back(std::move(t));
    merge_with_others(s, s->terms.size() - 1);
  }

  // Merges term i with another split of the same index while one fits.
  void merge_with_others(Sum* s, size_t i) {
    for (size_t j = 0; j < s->terms.size(); ++j) {
      if (j == i) continue;
      std::optional<Term> m = merge_splits(s->terms[i], s->terms[j]);
      if (!m) m = merge_splits(s->terms[j], s->terms[i]);
      if (!m) continue;
      size_t keep = std::min(i, j), drop = std::max(i, j);
      s->terms.erase(s->terms.begin() + static_cast<std::ptrdiff_t>(drop));
      s->terms.erase(s->terms.begin() + static_cast<std::ptrdiff_t>(keep));
      Term merged = *m;
      // The merged term may itself combine with an existing one.
      add_term(s, std::move(merged));
      return;
    }
  }

  Sum add(Sum a, const Sum& b) {
    for (const Term& t : b.terms) add_term(&a, t);
    a.base = wrap(a.dtype, wrapping_add(a.base, b.base));
    return a;
  }

  Sum scale(Sum s, int64_t c) {
    Sum r{s.dtype, {}, wrap(s.dtype, wrapping_mul(s.base, c))};
    for (Term& t : s.terms) {
      t.scale = wrap(s.dtype, wrapping_mul(t.scale, c));
      if (t.scale != 0) r.terms.push_back(std::move(t));
    }
    return r;
  }

  // A sum as (constant factor, expression): a single term keeps its split and gives its scale.
  std::pair<int64_t, Expr> factor_out(const Sum& s) {
    if (s.terms.size() == 1 && s.base == 0) {
      return {s.terms[0].scale, split_expr(s.terms[0], s.dtype)};
    }
    return {1, to_expr(s)};
  }

  static void flatten_product(const Expr& e, std::vector<Expr>* factors) {
    if (const auto* m = e.as<Mul>()) {
      if (!m->a.is<IntImm>() && !m->b.is<IntImm>()) {
        flatten_product(m->a, factors);
        flatten_product(m->b, factors);
        return;
      }
    }
    factors->push_back(e);
  }

  Sum multiply(const Sum& a, const Sum& b) {
    if (b.terms.empty()) return scale(a, b.base);
    if (a.terms.empty()) return scale(b, a.base);
    // A product of two non-constant sums is one term; its factors are sorted so that x*y and
    // y*x are the same term.
    auto [fa, ea] = factor_out(a);
    auto [fb, eb] = factor_out(b);
    std::vector<Expr> factors;
    flatten_product(ea, &factors);
    flatten_product(eb, &factors);
    std::stable_sort(factors.begin(), factors.end(),
                     [](const Expr& x, const Expr& y) { return deep_compare(x, y) < 0; });
    Expr product = factors[0];
    for (size_t i = 1; i < factors.size(); ++i) product = make<Mul>(a.dtype, product, factors[i]);
    return scale(leaf(product), wrap(a.dtype, wrapping_mul(fa, fb)));
  }

  // ------------------------------------------------------------------------------------------
  // Bounds of the parts of a sum.

  ConstIntBound term_bound(const Term& t) {
    ConstIntBound b = impl_->bound(t.index);
    if (t.upper != kPosInf && !(b.min_value >= 0 && b.max_value < t.upper)) {
      b = {0, t.upper - 1};
    }
    if (t.lower != 1) {
      b = {bound_floordiv(b.min_value, t.lower), bound_floordiv(b.max_value, t.lower)};
    }
    int64_t lo = bound_mul(b.min_value, t.scale), hi = bound_mul(b.max_value, t.scale);
    return {std::min(lo, hi), std::max(lo, hi)};
  }

  ConstIntBound sum_bound(const Sum& s) {
    ConstIntBound r = ConstIntBound::single(s.base);
    for (const Term& t : s.terms) {
      ConstIntBound b = term_bound(t);
      r.min_value = bound_add(r.min_value, b.min_value);
      r.max_value = r.max_value == kPosInf || b.max_value == kPosInf
                        ? kPosInf
                        : bound_add(r.max_value, b.max_value);
    }
    return r;
  }

  // The constant k with k*c <= every value of s < (k+1)*c, if there is one.
  std::optional<int64_t> common_quotient(const Sum& s, int64_t c) {
    ConstIntBound b = sum_bound(s);
    if (b.min_value == kNegInf || b.max_value == kPosInf) return std::nullopt;
    int64_t q = floordiv_int(b.min_value, c);
    if (q != floordiv_int(b.max_value, c)) return std::nullopt;
    return q;
  }

  // ------------------------------------------------------------------------------------------
  // Division and remainder by a constant.

  Sum divide(NodeKind kind, const Sum& a, int64_t c) {
    if (c == kNegInf) return leaf(rebuild(kind, a.dtype, to_expr(a), make_const(a.dtype, c)));
    switch (kind) {
      case NodeKind::FloorDiv:
        // floordiv(x, c) == floordiv(-x, -c)
        return c > 0 ? floordiv_sum(a, c) : floordiv_sum(scale(a, -1), -c);
      case NodeKind::FloorMod:
        // floormod(x, c) == -floormod(-x, -c)
        return c > 0 ? floormod_sum(a, c) : scale(floormod_sum(scale(a, -1), -c), -1);
      case NodeKind::Div:
        // truncdiv(x, c) == -truncdiv(x, -c)
        return c > 0 ? truncdiv_sum(a, c) : scale(truncdiv_sum(a, -c), -1);
      default:
        // truncmod(x, c) == truncmod(x, -c)
        return truncmod_sum(a, c > 0 ? c : -c);
    }
  }

  // The terms of `s` whose scale is a multiple of `d`, divided by d, and the rest.
  std::pair<Sum, Sum> split_multiples(const Sum& s, int64_t d) {
    Sum multiple{s.dtype, {}, 0}, rest{s.dtype, {}, s.base};
    for (const Term& t : s.terms) {
      if (t.scale % d == 0) {
        Term u = t;
        u.scale = t.scale / d;
        multiple.terms.push_back(u);
      } else {
        rest.terms.push_back(t);
      }
    }
    return {multiple, rest};
  }

  // The largest scale s of a term of `r` with s | c and 1 < s < c such that the terms not
  // divisible by s, plus the constant, lie in [0, s): then r = s*T + E with E in [0, s).
  std::optional<std::pair<int64_t, std::pair<Sum, Sum>>> find_small_remainder(const Sum& r,
                                                                              int64_t c) {
    std::vector<int64_t> candidates;
    for (const Term& t : r.terms) {
      if (t.scale > 1 && t.scale < c && c % t.scale == 0) candidates.push_back(t.scale);
    }
    std::sort(candidates.rbegin(), candidates.rend());
    for (int64_t s : candidates) {
      auto parts = split_multiples(r, s);
      ConstIntBound e = sum_bound(parts.second);
      if (e.min_value >= 0 && e.max_value < s) return std::make_pair(s, parts);
    }
    return std::nullopt;
  }

  // floordiv(a, c) for c > 0.
  Sum floordiv_sum(const Sum& a, int64_t c) {
    if (a.terms.empty()) return constant(a.dtype, floordiv_int(a.base, c));
    // Step 1. Terms whose scale c divides, and the multiple of c in the constant, come out:
    // floordiv(c*q + r, c) == q + floordiv(r, c).
    auto [quotient, r] = split_multiples(a, c);
    quotient.base = floordiv_int(a.base, c);
    r.base = floormod_int(a.base, c);
    // Step 2. floordiv(r, c) with 0 <= r.base < c.
    return add(quotient, floordiv_remainder(r, c));
  }

  Sum floordiv_remainder(const Sum& r, int64_t c) {
    if (r.terms.empty()) return constant(r.dtype, 0);
    if (std::optional<int64_t> q = common_quotient(r, c)) return constant(r.dtype, *q);
    // r = s*T + E with E in [0, s) and s | c: floordiv(r, c) == floordiv(T, c / s).
    if (auto found = find_small_remainder(r, c)) {
      return floordiv_sum(found->second.first, c / found->first);
    }
    // floordiv(floordiv(floormod(x, u), l), c) == floordiv(floormod(x, u), l*c).
    if (r.terms.size() == 1 && r.base == 0 && r.terms[0].scale == 1) {
      const Term& t = r.terms[0];
      std::optional<int64_t> lower = checked_mul(t.lower, c);
      if (lower) {
        if (t.upper != kPosInf && *lower >= t.upper) return constant(r.dtype, 0);
        return Sum{r.dtype, {Term{t.index, *lower, t.upper, 1}}, 0};
      }
    }
    return Sum{r.dtype, {Term{to_expr(r), c, kPosInf, 1}}, 0};
  }

  // floormod(a, c) for c > 0.
  Sum floormod_sum(const Sum& a, int64_t c) {
    if (a.terms.empty()) return constant(a.dtype, floormod_int(a.base, c));
    // Step 1. Multiples of c do not change the remainder.
    Sum r = split_multiples(a, c).second;
    r.base = floormod_int(a.base, c);
    if (r.terms.empty()) return r;
    // Step 2. All of r in one period [k*c, (k+1)*c): the remainder is r - k*c.
    if (std::optional<int64_t> q = common_quotient(r, c)) {
      std::optional<int64_t> shift = checked_mul(*q, c);
      if (shift) {
        r.base = wrap(r.dtype, wrapping_sub(r.base, *shift));
        return r;
      }
    }
    // Step 3. r = s*T + E with E in [0, s) and s | c: floormod(r, c) == s*floormod(T, c/s) + E.
    if (auto found = find_small_remainder(r, c)) {
      int64_t s = found->first;
      return add(scale(floormod_sum(found->second.first, c / s), s), found->second.second);
    }
    // Step 4. floormod(floordiv(floormod(x, u), l), c) == floordiv(floormod(x, l*c), l) when
    // l*c divides u.
    if (r.terms.size() == 1 && r.base == 0 && r.terms[0].scale == 1) {
      const Term& t = r.terms[0];
      std::optional<int64_t> upper = checked_mul(t.lower, c);
      if (upper && divides(*upper, t.upper))
        return Sum{r.dtype, {Term{t.index, t.lower, *upper, 1}}, 0};
    }
    return Sum{r.dtype, {Term{to_expr(r), 1, c, 1}}, 0};
  }

  // Whether every scale and the constant are multiples of c (an exact division).
  static bool all_multiples(const Sum& a, int64_t c) {
    if (a.base % c != 0) return false;
    for (const Term& t : a.terms) {
      if (t.scale % c != 0) return false;
    }
    return true;
  }

  // Whether every term of r splits an index that a term of a splits too (r introduces no new
  // floordiv/floormod of a whole sum).
  static bool uses_only_indices_of(const Sum& r, const Sum& a) {
    for (const Term& t : r.terms) {
      bool found = false;
      for (const Term& u : a.terms) found = found || deep_equal(t.index, u.index);
      if (!found) return false;
    }
    return true;
  }

  // truncdiv(a, c) for c > 0.
  Sum truncdiv_sum(const Sum& a, int64_t c) {
    if (a.terms.empty()) return constant(a.dtype, truncdiv_int(a.base, c));
    if (all_multiples(a, c)) return floordiv_sum(a, c);
    ConstIntBound b = sum_bound(a);
    if (b.min_value >= 0) return floordiv_sum(a, c);
    // For a <= 0: truncdiv(a, c) == -floordiv(-a, c), when that resolves into the terms of a.
    if (b.max_value <= 0) {
      Sum r = scale(floordiv_sum(scale(a, -1), c), -1);
      if (uses_only_indices_of(r, a)) return r;
    }
    return leaf(make<Div>(a.dtype, to_expr(a), make_const(a.dtype, c)));
  }

  // truncmod(a, c) for c > 0.
  Sum truncmod_sum(const Sum& a, int64_t c) {
    if (a.terms.empty()) return constant(a.dtype, truncmod_int(a.base, c));
    if (all_multiples(a, c)) return constant(a.dtype, 0);
    ConstIntBound b = sum_bound(a);
    if (b.min_value >= 0) return floormod_sum(a, c);
    // For a <= 0: truncmod(a, c) == -floormod(-a, c), when that resolves into the terms of a.
    if (b.max_value <= 0) {
      Sum r = scale(floormod_sum(scale(a, -1), c), -1);
      if (uses_only_indices_of(r, a)) return r;
    }
    return leaf(make<Mod>(a.dtype, to_expr(a), make_const(a.dtype, c)));
  }

  Analyzer::Impl* impl_;
};

}  // namespace

Expr linear_expr(const LinearSum& sum) {
  DataType t = sum.dtype;
  auto scaled = [&](const Expr& e, int64_t s) {
    return s == 1 ? e : Expr(make<Mul>(t, e, make_const(t, s)));
  };
  Expr acc;
  for (const auto& [e, s] : sum.terms) {
    if (s <= 0) continue;
    Expr term = scaled(e, s);
    acc = acc.defined() ? Expr(make<Add>(t, acc, term)) : term;
  }
  int64_t base = sum.base;
  bool has_negative = false;
  for (const auto& term : sum.terms) has_negative = has_negative || term.second < 0;
  if (!acc.defined() && has_negative && base > 0) {
    acc = make_const(t, base);  // 5 - x rather than 0 - x + 5
    base = 0;
  }
  for (const auto& [e, s] : sum.terms) {
    if (s >= 0) continue;
    std::optional<int64_t> magnitude = checked_neg(s);
    if (magnitude && wrap_to_dtype(*magnitude, t) == *magnitude) {
      if (!acc.defined()) acc = make_zero(t);
      acc = make<Sub>(t, acc, scaled(e, *magnitude));
    } else {
      Expr term = scaled(e, s);
      acc = acc.defined() ? Expr(make<Add>(t, acc, term)) : term;
    }
  }
  if (!acc.defined()) return make_const(t, base);
  if (base > 0) return make<Add>(t, acc, make_const(t, base));
  if (base < 0) {
    std::optional<int64_t> magnitude = checked_neg(base);
    if (magnitude && wrap_to_dtype(*magnitude, t) == *magnitude) {
      return make<Sub>(t, acc, make_const(t, *magnitude));
    }
    return make<Add>(t, acc, make_const(t, base));
  }
  return acc;
}

LinearSum canonical_sum(Analyzer::Impl* impl, const Expr& e) {
  Canonicalizer c(impl);
  Sum s = c.to_sum(e);
  LinearSum r{s.dtype, {}, s.base};
  for (const Term& t : s.terms) {
    Sum single{s.dtype, {t}, 0};
    single.terms[0].scale = 1;
    r.terms.emplace_back(c.to_expr(single), t.scale);
  }
  return r;
}

Expr Analyzer::Impl::canonical(const Expr& e) {
  return Canonicalizer(this).mutate(e);
}

}  // namespace kiln::arith
