// Rewriting of index expressions into sums of splits of iterator marks: sums and scalings
// combine terms, and floordiv/floormod by a positive constant take digits of a (fused)
// iterator. Fusion is in iter_map_fuse.cc, predicates in iter_map_predicate.cc.
#include <algorithm>
#include <functional>

#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "src/arith/int_math.h"
#include "src/arith/iter_map_impl.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// Factor arithmetic

bool FactorMath::equal(const Expr& a, const Expr& b) const {
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca != nullptr && cb != nullptr) return *ca == *cb;
  return analyzer->can_prove_equal(a, b);
}

bool FactorMath::less_equal(const Expr& a, const Expr& b) const {
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca != nullptr && cb != nullptr) return *ca <= *cb;
  return analyzer->can_prove(le(a, b));
}

bool FactorMath::divides(const Expr& d, const Expr& x) const {
  const int64_t* cd = as_const_int(d);
  const int64_t* cx = as_const_int(x);
  if (cd != nullptr && *cd == 1) return true;
  if (cx != nullptr && *cx == 0) return true;
  if (cd != nullptr && cx != nullptr) return *cd != 0 && floormod_int(*cx, *cd) == 0;
  if (cd != nullptr && *cd == 0) return false;
  return is_const_int(analyzer->simplify(floormod(x, d)), 0);
}

Expr FactorMath::mul(const Expr& a, const Expr& b) const {
  if (is_const_int(a, 1)) return b;
  if (is_const_int(b, 1)) return a;
  Expr product = ir::mul(a, b);
  return product.is<IntImm>() ? product : analyzer->simplify(product);
}

Expr FactorMath::exact_div(const Expr& a, const Expr& b) const {
  if (is_const_int(b, 1)) return a;
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca != nullptr && cb != nullptr) {
    auto [x, y] = promote("floordiv", a, b);
    return make_const(x->dtype, floordiv_int(*ca, *cb));
  }
  return analyzer->simplify(floordiv(a, b));
}

Expr FactorMath::ceil_div(const Expr& a, const Expr& b) const {
  if (is_const_int(b, 1)) return a;
  return analyzer->simplify(floordiv(a + b - 1, b));
}

// ---------------------------------------------------------------------------------------------
// Sums of splits

namespace {

Expr add_base(const Expr& a, const Expr& b) {
  if (is_const_int(a, 0)) return b;
  if (is_const_int(b, 0)) return a;
  return add(a, b);
}

}  // namespace

bool IterMapRewriter::same_split(const IterSplitExpr& a, const IterSplitExpr& b) {
  FactorMath m{analyzer_};
  return a.source == b.source && m.equal(a.lower_factor, b.lower_factor) &&
         m.equal(a.extent, b.extent);
}

namespace {

// Adds the scales of equal splits and drops terms whose scale is zero.
void merge_terms(IterSumExpr* sum,
                 const std::function<bool(const IterSplitExpr&, const IterSplitExpr&)>& same,
                 Analyzer* analyzer) {
  std::vector<IterSplitExpr> merged;
  for (const IterSplitExpr& arg : sum->args) {
    bool found = false;
    for (IterSplitExpr& m : merged) {
      if (same(m, arg)) {
        m.scale = analyzer->simplify(m.scale + arg.scale);
        found = true;
        break;
      }
    }
    if (!found) merged.push_back(arg);
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const IterSplitExpr& a) { return is_const_int(a.scale, 0); }),
               merged.end());
  sum->args = std::move(merged);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The rewriter

IterMapRewriter::IterMapRewriter(const IterRanges& input_iters, Analyzer* analyzer)
    : analyzer_(analyzer) {
  internal_check(analyzer != nullptr) << "IterMapRewriter: null analyzer";
  // A fixed order of the loops keeps marks and messages the same from run to run.
  std::vector<std::pair<const Var*, Range>> loops(input_iters.begin(), input_iters.end());
  std::stable_sort(loops.begin(), loops.end(),
                   [](const auto& a, const auto& b) { return a.first->name < b.first->name; });
  Expr domain = bool_const(true);
  for (const auto& [var, range] : loops) {
    internal_check(var != nullptr && range.min.defined() && range.extent.defined())
        << "detect_iter_map: null loop variable or range";
    Expr min = analyzer->simplify(range.min);
    Expr extent = analyzer->simplify(range.extent);
    if (is_const_int(extent, 1)) {
      var_map_[var] = IterSumExpr{{}, min};
      continue;
    }
    auto mark = std::make_shared<IterMark>();
    mark->var = Ref<Var>(var);
    mark->var_min = min;
    mark->extent = extent;
    input_marks_.push_back(mark);
    var_map_[var] = IterSumExpr{
        {IterSplitExpr{mark, make_one(extent->dtype), extent, make_one(var->dtype)}}, min};
    Ref<Var> v(var);
    domain = logical_and(domain, logical_and(le(min, v), lt(v, min + extent)));
  }
  scope_ = std::make_unique<ConstraintScope>(analyzer, domain);
}

IterMapRewriter::~IterMapRewriter() = default;

bool IterMapRewriter::uses_input(const Expr& e) const {
  return uses_var(e, [this](const Var* v) { return var_map_.count(v) > 0; });
}

std::optional<IterSumExpr> IterMapRewriter::rewrite(const Expr& index, std::string* error) {
  std::optional<IterSumExpr> sum = visit(index, error);
  std::string ignored;
  // Digits of a fusion that a predicate shrank may not divide its smaller extent one by one
  // while their sum is the fusion: `floordiv(f, 3)*3 + floormod(f, 3)` with f < 8. Rewrite
  // them as digits of the whole fusion, which the final fuse turns into the shrunk one.
  if (!sum && !restricted_.empty()) {
    substitute_restricted_ = false;
    try {
      sum = visit(index, &ignored);
    } catch (...) {
      substitute_restricted_ = true;
      throw;
    }
    substitute_restricted_ = true;
  }
  // A form the rules miss may simplify into one they handle: `floordiv(f, 4)*4 + floormod(f, 4)`
  // of a fused loop that a predicate shrank to 6 values is f.
  if (!sum) {
    Expr simplified = analyzer_->simplify(index);
    if (!simplified.same_as(index)) sum = visit(simplified, &ignored);
  }
  if (sum) sum->base = analyzer_->simplify(sum->base);
  return sum;
}

std::optional<IterSumExpr> IterMapRewriter::visit(const Expr& e, std::string* error) {
  auto same = [this](const IterSplitExpr& a, const IterSplitExpr& b) { return same_split(a, b); };
  FactorMath m{analyzer_};
  auto add_sums = [&](IterSumExpr a, const IterSumExpr& b) {
    a.args.insert(a.args.end(), b.args.begin(), b.args.end());
    a.base = add_base(a.base, b.base);
    merge_terms(&a, same, analyzer_);
    return a;
  };
  auto scale_sum = [&](IterSumExpr a, const Expr& c) {
    if (is_const_int(c, 0)) return IterSumExpr{{}, zero_like(c)};
    for (IterSplitExpr& arg : a.args) arg.scale = m.mul(arg.scale, c);
    a.base = is_const_int(a.base, 0) ? a.base : mul(a.base, c);
    return a;
  };

  if (!e->dtype.is_int() || !e->dtype.is_scalar()) {
    *error = "an index must be a scalar signed integer, found " + text(e) + " of dtype " +
             e->dtype.str();
    return std::nullopt;
  }
  if (!uses_input(e)) return IterSumExpr{{}, e};
  if (const auto* v = e.as<Var>()) return var_map_.at(v);
  if (const auto* op = e.as<Add>()) {
    auto a = visit(op->a, error);
    if (!a) return std::nullopt;
    auto b = visit(op->b, error);
    if (!b) return std::nullopt;
    return add_sums(*a, *b);
  }
  if (const auto* op = e.as<Sub>()) {
    auto a = visit(op->a, error);
    if (!a) return std::nullopt;
    auto b = visit(op->b, error);
    if (!b) return std::nullopt;
    return add_sums(*a, scale_sum(*b, make_const(op->b->dtype, int64_t{-1})));
  }
  if (const auto* op = e.as<Mul>()) {
    bool a_iter = uses_input(op->a), b_iter = uses_input(op->b);
    if (a_iter && b_iter) {
      *error = text(e) + " is not affine: it multiplies " + text(op->a) + " and " + text(op->b) +
               ", which both use loop iterators";
      return std::nullopt;
    }
    auto sum = visit(a_iter ? op->a : op->b, error);
    if (!sum) return std::nullopt;
    return scale_sum(*sum, a_iter ? op->b : op->a);
  }
  // A widening integer cast keeps the value: int64(i*4 + j) is the same digits.
  if (const auto* op = e.as<Cast>()) {
    DataType from = op->value->dtype;
    if (from.is_int() && from.bits() <= e->dtype.bits()) {
      auto sum = visit(op->value, error);
      if (sum) sum->base = cast(e->dtype, sum->base);
      return sum;
    }
  }
  bool floor_op = e.is<FloorDiv>() || e.is<FloorMod>();
  bool trunc_op = e.is<Div>() || e.is<Mod>();
  if (floor_op || trunc_op) {
    const auto* bin = static_cast<const BinaryNode*>(e.get());
    if (uses_input(bin->b)) {
      *error = text(e) + " is not affine: its divisor " + text(bin->b) + " uses loop iterators";
      return std::nullopt;
    }
    if (!analyzer_->can_prove(gt(bin->b, zero_like(bin->b)))) {
      *error =
          text(e) + " is not affine: its divisor " + text(bin->b) + " is not known to be positive";
      return std::nullopt;
    }
    // Truncating division equals floor division for a non-negative dividend.
    if (trunc_op && !analyzer_->can_prove_greater_equal(bin->a, 0)) {
      *error = text(e) + " is not affine: it divides by truncation a value that may be negative";
      return std::nullopt;
    }
    auto a = visit(bin->a, error);
    if (!a) return std::nullopt;
    bool is_div = e.is<FloorDiv>() || e.is<Div>();
    auto result = is_div ? floordiv_sum(*a, bin->b, error) : floormod_sum(*a, bin->b, error);
    if (!result) *error = "in " + text(e) + ": " + *error;
    return result;
  }
  *error = text(e) + " is not affine: " + kind_name(e->kind()) + " of loop iterators";
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Division

namespace {

// b = b1 * s + b0 with 0 <= b0 < s, for an offset b and a positive scale s.
bool split_offset(const Expr& b, const Expr& s, const FactorMath& m, Expr* b1, Expr* b0) {
  const int64_t* cb = as_const_int(b);
  const int64_t* cs = as_const_int(s);
  if (cb != nullptr && cs != nullptr) {
    *b1 = make_const(b->dtype, floordiv_int(*cb, *cs));
    *b0 = make_const(b->dtype, floormod_int(*cb, *cs));
    return true;
  }
  if (!m.divides(s, b)) return false;
  *b1 = m.exact_div(b, s);
  *b0 = zero_like(b);
  return true;
}

}  // namespace

std::optional<IterSumExpr> IterMapRewriter::floordiv_sum(const IterSumExpr& dividend, const Expr& c,
                                                         std::string* error) {
  FactorMath m{analyzer_};
  if (is_const_int(c, 1)) return dividend;
  // The digits of a fusion that a predicate shrank are divided as that fusion.
  IterSumExpr sum = use_restricted_fusions(dividend);
  // Step 1. Terms whose scale is a multiple of c divide exactly; the rest is divided as one.
  IterSumExpr quotient{{}, zero_like(c)}, rest{{}, zero_like(c)};
  for (IterSplitExpr arg : sum.args) {
    if (m.divides(c, arg.scale)) {
      arg.scale = m.exact_div(arg.scale, c);
      quotient.args.push_back(arg);
    } else {
      rest.args.push_back(arg);
    }
  }
  if (m.divides(c, sum.base)) {
    quotient.base = m.exact_div(sum.base, c);
  } else {
    rest.base = sum.base;
  }
  if (rest.args.empty()) {
    quotient.base = analyzer_->simplify(add_base(quotient.base, floordiv(rest.base, c)));
    return quotient;
  }
  Expr rest_expr = to_expr(rest);
  if (analyzer_->can_prove(logical_and(ge(rest_expr, zero_like(rest_expr)), lt(rest_expr, c)))) {
    return quotient;
  }
  // Step 2. The rest must be one scaled digit x*s + b with s dividing c.
  auto fused = fuse(IterSumExpr{rest.args, zero_like(c)}, error);
  if (!fused) return std::nullopt;
  IterSplitExpr x = fused->args[0];
  Expr s = x.scale;
  x.scale = make_one(s->dtype);
  if (!analyzer_->can_prove(gt(s, zero_like(s))) || !m.divides(s, c)) {
    *error =
        "the scale " + text(s) + " of " + text(to_expr(*fused)) + " does not divide " + text(c);
    return std::nullopt;
  }
  Expr c1 = m.exact_div(c, s);
  Expr b1 = zero_like(c), b0;
  if (!is_const_int(rest.base, 0)) {
    if (!split_offset(rest.base, s, m, &b1, &b0) || !m.divides(c1, b1)) {
      *error = "the offset " + text(rest.base) + " of " + text(rest_expr) +
               " is not a multiple of the divisor " + text(c);
      return std::nullopt;
    }
  }
  // Step 3. floordiv(x*s + b1*s + b0, c1*s) = floordiv(x, c1) + b1/c1.
  auto q = split_floordiv(x, c1, error);
  if (!q) return std::nullopt;
  quotient.args.insert(quotient.args.end(), q->args.begin(), q->args.end());
  quotient.base =
      analyzer_->simplify(add_base(add_base(quotient.base, q->base), m.exact_div(b1, c1)));
  return quotient;
}

std::optional<IterSumExpr> IterMapRewriter::floormod_sum(const IterSumExpr& dividend, const Expr& c,
                                                         std::string* error) {
  FactorMath m{analyzer_};
  if (is_const_int(c, 1)) return IterSumExpr{{}, zero_like(c)};
  IterSumExpr sum = use_restricted_fusions(dividend);
  // Step 1. Terms whose scale is a multiple of c vanish.
  IterSumExpr rest{{}, zero_like(c)};
  for (const IterSplitExpr& arg : sum.args) {
    if (!m.divides(c, arg.scale)) rest.args.push_back(arg);
  }
  if (!m.divides(c, sum.base)) {
    const int64_t* cb = as_const_int(sum.base);
    const int64_t* cc = as_const_int(c);
    rest.base = cb != nullptr && cc != nullptr ? make_const(sum.base->dtype, floormod_int(*cb, *cc))
                                               : sum.base;
  }
  if (rest.args.empty()) return IterSumExpr{{}, analyzer_->simplify(floormod(rest.base, c))};
  Expr rest_expr = to_expr(rest);
  if (analyzer_->can_prove(logical_and(ge(rest_expr, zero_like(rest_expr)), lt(rest_expr, c)))) {
    return rest;
  }
  // Step 2. The rest must be one scaled digit x*s + b with s dividing c.
  auto fused = fuse(IterSumExpr{rest.args, zero_like(c)}, error);
  if (!fused) return std::nullopt;
  IterSplitExpr x = fused->args[0];
  Expr s = x.scale;
  x.scale = make_one(s->dtype);
  if (!analyzer_->can_prove(gt(s, zero_like(s))) || !m.divides(s, c)) {
    *error =
        "the scale " + text(s) + " of " + text(to_expr(*fused)) + " does not divide " + text(c);
    return std::nullopt;
  }
  Expr c1 = m.exact_div(c, s);
  Expr b1 = zero_like(c), b0 = zero_like(c);
  if (!is_const_int(rest.base, 0)) {
    if (!split_offset(rest.base, s, m, &b1, &b0) || !m.divides(c1, b1)) {
      *error = "the offset " + text(rest.base) + " of " + text(rest_expr) +
               " is not a multiple of the divisor " + text(c);
      return std::nullopt;
    }
  }
  // Step 3. floormod(x*s + b1*s + b0, c1*s) = floormod(x, c1)*s + b0.
  auto r = split_floormod(x, c1, error);
  if (!r) return std::nullopt;
  for (IterSplitExpr& arg : r->args) arg.scale = m.mul(arg.scale, s);
  r->base = analyzer_->simplify(add_base(m.mul(r->base, s), b0));
  return r;
}

std::optional<IterSumExpr> IterMapRewriter::split_floordiv(const IterSplitExpr& x, const Expr& c,
                                                           std::string* error) {
  FactorMath m{analyzer_};
  if (is_const_int(c, 1)) return IterSumExpr{{x}, zero_like(c)};
  const IterMark& mark = *x.source;
  Expr lower = m.mul(x.lower_factor, c);
  if (m.equal(x.extent, c)) return IterSumExpr{{}, zero_like(c)};
  if (m.divides(c, x.extent)) {
    return IterSumExpr{{IterSplitExpr{x.source, lower, m.exact_div(x.extent, c), x.scale}},
                       zero_like(c)};
  }
  // The top digits of a mark: floordiv(floordiv(v, lf), c) needs no floormod.
  if (m.less_equal(mark.extent, m.mul(x.lower_factor, x.extent))) {
    return IterSumExpr{{IterSplitExpr{x.source, lower, m.ceil_div(x.extent, c), x.scale}},
                       zero_like(c)};
  }
  if (m.less_equal(x.extent, c)) return IterSumExpr{{}, zero_like(c)};
  *error = "the extent " + text(x.extent) + " of " + text(to_expr(x)) + " is not divisible by " +
           text(c);
  return std::nullopt;
}

std::optional<IterSumExpr> IterMapRewriter::split_floormod(const IterSplitExpr& x, const Expr& c,
                                                           std::string* error) {
  FactorMath m{analyzer_};
  if (m.divides(c, x.extent)) {
    return IterSumExpr{{IterSplitExpr{x.source, x.lower_factor, c, x.scale}}, zero_like(c)};
  }
  if (m.less_equal(x.extent, c)) return IterSumExpr{{x}, zero_like(c)};
  *error = "the extent " + text(x.extent) + " of " + text(to_expr(x)) + " is not divisible by " +
           text(c);
  return std::nullopt;
}

}  // namespace kiln::arith
