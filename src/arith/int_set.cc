// Interval sets: evaluation of an expression's value set by interval arithmetic over its node
// kinds, set union and intersection, and the covering region of a buffer access.
#include "kiln/arith/int_set.h"

#include <optional>
#include <ostream>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "src/arith/expr_compare.h"

namespace kiln::arith {

using namespace ir;

// ---------------------------------------------------------------------------------------------
// IntSet

IntSet IntSet::nothing() {
  IntSet s;
  s.empty_ = true;
  return s;
}

namespace {

// A constant end past half of a signed type's range says no more than that the value fits the
// type (it comes from a type's limits, or wraps there): it is left infinite, so that arithmetic
// on the set's ends (an extent max - min + 1) cannot overflow. See from_bound.
Expr bounded_end(Expr end, bool is_max) {
  const int64_t* c = as_const_int(end);
  if (c == nullptr || !end->dtype.is_int() || end->dtype.bits() > 32) return end;
  int64_t half = int64_t{1} << (end->dtype.bits() - 2);
  if (is_max ? *c >= half : *c <= -half) return Expr();
  return end;
}

}  // namespace

IntSet IntSet::interval(Expr min, Expr max) {
  IntSet s;
  s.min_ = bounded_end(std::move(min), false);
  s.max_ = bounded_end(std::move(max), true);
  return s;
}

IntSet IntSet::single_point(Expr value) {
  internal_check(value.defined()) << "IntSet::single_point: null expression";
  // A point is exact, however large: its extent is 1.
  IntSet s;
  s.min_ = value;
  s.max_ = std::move(value);
  return s;
}

IntSet IntSet::from_range(const Range& range) {
  internal_check(range.min.defined() && range.extent.defined()) << "IntSet::from_range: null range";
  if (is_const_int(range.extent, 1)) return single_point(range.min);
  return interval(range.min, range.min + range.extent - 1);
}

IntSet IntSet::from_bound(const ConstIntBound& bound, DataType dtype) {
  if (bound.min_value > bound.max_value) return nothing();
  // An end near the limit of a signed type (past half of it) says only that the value fits the
  // type, or derives from such a bound (`x % n` for an unknown n): it is left infinite, so that
  // arithmetic on the set's ends cannot wrap around.
  bool is_signed = dtype.is_int() && dtype.bits() < 64;
  int64_t type_min = is_signed ? -(int64_t{1} << (dtype.bits() - 2)) : ConstIntBound::kNegInf;
  int64_t type_max = is_signed ? (int64_t{1} << (dtype.bits() - 2)) : ConstIntBound::kPosInf;
  Expr lo = bound.min_value <= type_min || bound.min_value == ConstIntBound::kNegInf
                ? Expr()
                : make_const(dtype, bound.min_value);
  Expr hi = bound.max_value >= type_max || bound.max_value == ConstIntBound::kPosInf
                ? Expr()
                : make_const(dtype, bound.max_value);
  return interval(lo, hi);
}

bool IntSet::is_single_point() const {
  return !empty_ && min_.defined() && max_.defined() &&
         (min_.same_as(max_) || deep_equal(min_, max_));
}

Range IntSet::cover_range(Analyzer* analyzer) const {
  if (empty_) return Range{int32_const(0), int32_const(0)};
  user_check(min_.defined() && max_.defined())
      << "IntSet::cover_range: the set " << *this << " is unbounded and has no covering range";
  if (is_single_point()) return Range{min_, make_one(min_->dtype)};
  return Range{min_, analyzer->simplify(max_ - min_ + 1)};
}

Range IntSet::cover_range(const Range& bounds, Analyzer* analyzer) const {
  if (empty_) return Range{bounds.min, make_zero(bounds.extent->dtype)};
  IntSet filled = interval(min_.defined() ? min_ : bounds.min,
                           max_.defined() ? max_ : bounds.min + bounds.extent - 1);
  return filled.cover_range(analyzer);
}

std::ostream& operator<<(std::ostream& os, const IntSet& set) {
  if (set.is_nothing()) return os << "{}";
  os << "[";
  if (set.min().defined()) {
    os << set.min();
  } else {
    os << "-inf";
  }
  os << ", ";
  if (set.max().defined()) {
    os << set.max();
  } else {
    os << "+inf";
  }
  return os << "]";
}

IntSetMap int_set_map(const std::unordered_map<const Var*, Range>& ranges) {
  IntSetMap map;
  for (const auto& [var, range] : ranges) map.emplace(var, IntSet::from_range(range));
  return map;
}

// ---------------------------------------------------------------------------------------------
// Set operations

namespace {

// Ends of sets combine with null as infinity: an operation with an infinite end is infinite.
Expr end_op(const Expr& a, const Expr& b, Expr (*op)(Expr, Expr)) {
  if (!a.defined() || !b.defined()) return Expr();
  const int64_t* x = as_const_int(a);
  const int64_t* y = as_const_int(b);
  DataType t = a->dtype;
  if (x != nullptr && y != nullptr && t.is_int() && t.bits() <= 32) {
    // Constant ends of 32-bit or narrower types fold exactly in 64 bits; a result the type
    // cannot hold is an infinite end, never a wrapped one.
    int64_t r = op == add ? *x + *y : op == mul ? *x * *y : 0;
    int64_t limit = int64_t{1} << (t.bits() - 1);
    if ((op == add || op == mul) && (r < -limit || r >= limit)) return Expr();
  }
  return op(a, b);
}

Expr negate_end(const Expr& e) {
  return e.defined() ? neg(e) : Expr();
}

}  // namespace

IntSet union_sets(const std::vector<IntSet>& sets, Analyzer* analyzer) {
  Expr lo, hi;
  bool lo_inf = false, hi_inf = false, any = false;
  for (const IntSet& s : sets) {
    if (s.is_nothing()) continue;
    any = true;
    if (!s.min().defined()) lo_inf = true;
    if (!s.max().defined()) hi_inf = true;
    if (!lo_inf) lo = lo.defined() ? min(lo, s.min()) : s.min();
    if (!hi_inf) hi = hi.defined() ? max(hi, s.max()) : s.max();
  }
  if (!any) return IntSet::nothing();
  return IntSet::interval(lo_inf ? Expr() : analyzer->simplify(lo),
                          hi_inf ? Expr() : analyzer->simplify(hi));
}

IntSet intersect_sets(const std::vector<IntSet>& sets, Analyzer* analyzer) {
  Expr lo, hi;
  for (const IntSet& s : sets) {
    if (s.is_nothing()) return IntSet::nothing();
    if (s.min().defined()) lo = lo.defined() ? max(lo, s.min()) : s.min();
    if (s.max().defined()) hi = hi.defined() ? min(hi, s.max()) : s.max();
  }
  if (lo.defined()) lo = analyzer->simplify(lo);
  if (hi.defined()) hi = analyzer->simplify(hi);
  if (lo.defined() && hi.defined() && analyzer->can_prove(lt(hi, lo))) return IntSet::nothing();
  return IntSet::interval(lo, hi);
}

bool can_prove_subset(const IntSet& a, const IntSet& b, Analyzer* analyzer) {
  if (a.is_nothing()) return true;
  if (b.is_nothing()) return false;
  if (b.min().defined()) {
    if (!a.min().defined() || !analyzer->can_prove(ge(a.min(), b.min()))) return false;
  }
  if (b.max().defined()) {
    if (!a.max().defined() || !analyzer->can_prove(le(a.max(), b.max()))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Evaluation

namespace {

class SetEvaluator {
 public:
  SetEvaluator(const IntSetMap& dom_map, Analyzer* analyzer)
      : dom_map_(dom_map), analyzer_(analyzer) {}

  IntSet eval(const Expr& e) {
    if (e->dtype.is_scalar() && !uses_domain(e)) return IntSet::single_point(e);
    if (e.is<IntImm>() || e.is<FloatImm>()) return IntSet::single_point(e);
    if (const auto* v = e.as<Var>()) {
      auto it = dom_map_.find(v);
      return it != dom_map_.end() ? it->second : IntSet::single_point(e);
    }
    if (const auto* op = e.as<Add>()) return add_sets(eval(op->a), eval(op->b));
    if (const auto* op = e.as<Sub>()) return add_sets(eval(op->a), negate(eval(op->b)));
    if (const auto* op = e.as<Mul>()) return mul_sets(e, eval(op->a), eval(op->b));
    if (const auto* op = e.as<FloorDiv>()) return div_sets(e, eval(op->a), eval(op->b), true);
    if (const auto* op = e.as<FloorMod>()) return mod_sets(e, eval(op->a), eval(op->b), true);
    if (const auto* op = e.as<Div>()) return div_sets(e, eval(op->a), eval(op->b), false);
    if (const auto* op = e.as<Mod>()) return mod_sets(e, eval(op->a), eval(op->b), false);
    if (const auto* op = e.as<Min>()) return min_sets(eval(op->a), eval(op->b));
    if (const auto* op = e.as<Max>()) return max_sets(eval(op->a), eval(op->b));
    if (const auto* op = e.as<Select>()) {
      return union_sets({eval(op->true_value), eval(op->false_value)}, analyzer_);
    }
    if (const auto* op = e.as<Cast>()) return cast_set(e, op);
    if (const auto* op = e.as<Let>()) {
      IntSet value = eval(op->value);
      IntSetMap inner = dom_map_;
      inner[op->var.get()] = value;
      SetEvaluator body(inner, analyzer_);
      return body.eval(op->body);
    }
    if (const auto* op = e.as<Broadcast>()) return eval(op->value);
    if (const auto* op = e.as<Ramp>()) return ramp_set(e, op);
    return fallback(e);
  }

 private:
  bool uses_domain(const Expr& e) const {
    return uses_var(e, [this](const Var* v) { return dom_map_.count(v) > 0; });
  }

  bool nonneg(const IntSet& s) {
    return s.has_lower_bound() && analyzer_->can_prove(ge(s.min(), make_zero(s.min()->dtype)));
  }
  bool nonpos(const IntSet& s) {
    return s.has_upper_bound() && analyzer_->can_prove(le(s.max(), make_zero(s.max()->dtype)));
  }
  bool positive(const IntSet& s) {
    return s.has_lower_bound() && analyzer_->can_prove(gt(s.min(), make_zero(s.min()->dtype)));
  }

  static IntSet negate(const IntSet& s) {
    if (s.is_nothing()) return s;
    return IntSet::interval(negate_end(s.max()), negate_end(s.min()));
  }

  static IntSet add_sets(const IntSet& a, const IntSet& b) {
    if (a.is_nothing() || b.is_nothing()) return IntSet::nothing();
    return IntSet::interval(end_op(a.min(), b.min(), add), end_op(a.max(), b.max(), add));
  }

  // [lo, hi] * p for a point p of known sign.
  IntSet scale_by_point(const IntSet& s, const Expr& p) {
    IntSet point = IntSet::single_point(p);
    if (nonneg(point)) {
      return IntSet::interval(end_op(s.min(), p, mul), end_op(s.max(), p, mul));
    }
    if (nonpos(point)) {
      return IntSet::interval(end_op(s.max(), p, mul), end_op(s.min(), p, mul));
    }
    return IntSet::everything();
  }

  IntSet mul_sets(const Expr& e, const IntSet& a, const IntSet& b) {
    if (a.is_nothing() || b.is_nothing()) return IntSet::nothing();
    if (a.is_single_point() && b.is_single_point()) return IntSet::single_point(a.min() * b.min());
    std::optional<IntSet> result;
    if (b.is_single_point()) {
      result = scale_by_point(a, b.min());
    } else if (a.is_single_point()) {
      result = scale_by_point(b, a.min());
    } else if (nonneg(a) && nonneg(b)) {
      result = IntSet::interval(a.min() * b.min(), end_op(a.max(), b.max(), mul));
    } else if (is_constant(a) && is_constant(b)) {
      int64_t corners[4] = {*as_const_int(a.min()) * *as_const_int(b.min()),
                            *as_const_int(a.min()) * *as_const_int(b.max()),
                            *as_const_int(a.max()) * *as_const_int(b.min()),
                            *as_const_int(a.max()) * *as_const_int(b.max())};
      int64_t lo = corners[0], hi = corners[0];
      for (int64_t c : corners) {
        lo = std::min(lo, c);
        hi = std::max(hi, c);
      }
      DataType t = a.min()->dtype;
      result = IntSet::interval(make_const(t, lo), make_const(t, hi));
    }
    if (result && !result->is_everything()) return *result;
    return fallback(e);
  }

  static bool is_constant(const IntSet& s) {
    return s.has_lower_bound() && s.has_upper_bound() && as_const_int(s.min()) != nullptr &&
           as_const_int(s.max()) != nullptr;
  }

  // Division by a positive (or negative) point is monotonic in the dividend. Truncating
  // division agrees with floor division when the dividend is non-negative.
  IntSet div_sets(const Expr& e, const IntSet& a, const IntSet& b, bool floor) {
    if (a.is_nothing() || b.is_nothing()) return IntSet::nothing();
    if (!b.is_single_point() || !e->dtype.is_int()) return fallback(e);
    const Expr& d = b.min();
    if (a.is_single_point()) {
      return IntSet::single_point(floor ? floordiv(a.min(), d) : truncdiv(a.min(), d));
    }
    if (!floor && !nonneg(a)) return fallback(e);
    auto div_end = [&](const Expr& x) { return x.defined() ? floordiv(x, d) : Expr(); };
    if (positive(b)) return IntSet::interval(div_end(a.min()), div_end(a.max()));
    if (floor && nonpos(b) && analyzer_->can_prove(lt(d, make_zero(d->dtype)))) {
      return IntSet::interval(div_end(a.max()), div_end(a.min()));
    }
    return fallback(e);
  }

  IntSet mod_sets(const Expr& e, const IntSet& a, const IntSet& b, bool floor) {
    if (a.is_nothing() || b.is_nothing()) return IntSet::nothing();
    if (!b.is_single_point() || !positive(b) || !e->dtype.is_int()) return fallback(e);
    if (!floor && !nonneg(a)) return fallback(e);
    const Expr& d = b.min();
    if (a.is_single_point()) {
      return IntSet::single_point(floor ? floormod(a.min(), d) : truncmod(a.min(), d));
    }
    // Within one period the remainder grows with the dividend.
    if (a.has_lower_bound() && a.has_upper_bound() &&
        analyzer_->can_prove_equal(floordiv(a.min(), d), floordiv(a.max(), d))) {
      return IntSet::interval(floormod(a.min(), d), floormod(a.max(), d));
    }
    return IntSet::interval(make_zero(e->dtype), d - 1);
  }

  static IntSet min_sets(const IntSet& a, const IntSet& b) {
    if (a.is_nothing()) return b;
    if (b.is_nothing()) return a;
    Expr hi;
    if (!a.max().defined()) {
      hi = b.max();
    } else if (!b.max().defined()) {
      hi = a.max();
    } else {
      hi = min(a.max(), b.max());
    }
    return IntSet::interval(end_op(a.min(), b.min(), min), hi);
  }

  static IntSet max_sets(const IntSet& a, const IntSet& b) {
    if (a.is_nothing()) return b;
    if (b.is_nothing()) return a;
    Expr lo;
    if (!a.min().defined()) {
      lo = b.min();
    } else if (!b.min().defined()) {
      lo = a.min();
    } else {
      lo = max(a.min(), b.min());
    }
    return IntSet::interval(lo, end_op(a.max(), b.max(), max));
  }

  // The lanes of base + k * stride, k in [0, lanes).
  IntSet ramp_set(const Expr& e, const Ramp* op) {
    IntSet stride = eval(op->stride);
    if (stride.is_nothing()) return stride;
    Expr last = make_const(op->stride->dtype, int64_t{op->lanes - 1});
    Expr zero = make_zero(op->stride->dtype);
    IntSet offsets;
    if (nonneg(stride)) {
      offsets = IntSet::interval(zero, end_op(stride.max(), last, mul));
    } else if (nonpos(stride)) {
      offsets = IntSet::interval(end_op(stride.min(), last, mul), zero);
    } else {
      return fallback(e);
    }
    return add_sets(eval(op->base), offsets);
  }

  IntSet cast_set(const Expr& e, const Cast* op) {
    DataType from = op->value->dtype;
    if (!e->dtype.is_integer() || !from.is_integer()) return fallback(e);
    IntSet v = eval(op->value);
    if (v.is_nothing()) return v;
    DataType to = e->dtype.element_of();
    // A narrowing conversion keeps the order of the ends only where the values fit the narrow
    // type; elsewhere it wraps, and the set is what the bounds say.
    if (to.bits() < from.bits() || (to.is_uint() != from.is_uint() && to.bits() == from.bits())) {
      bool fits = v.has_lower_bound() && v.has_upper_bound();
      if (fits) {
        ConstIntBound lo = analyzer_->const_int_bound(v.min());
        ConstIntBound hi = analyzer_->const_int_bound(v.max());
        ConstIntBound range = analyzer_->const_int_bound(make<Var>("x", to));
        fits = lo.min_value >= range.min_value && hi.max_value <= range.max_value;
      }
      if (!fits) return fallback(e);
    }
    auto cast_end = [&](const Expr& x) { return x.defined() ? cast(to, x) : Expr(); };
    return IntSet::interval(cast_end(v.min()), cast_end(v.max()));
  }

  // The constant bound of `e` while every domain variable lies in the constant bounds of its
  // set.
  IntSet fallback(const Expr& e) {
    if (!scope_) {
      Expr condition;
      for (const auto& [var, set] : dom_map_) {
        if (set.is_nothing() || !var->dtype.is_int()) continue;
        Ref<Var> v(var);
        auto add_fact = [&](Expr fact) {
          condition = condition.defined() ? logical_and(condition, fact) : fact;
        };
        if (set.has_lower_bound()) {
          int64_t lo = analyzer_->const_int_bound(set.min()).min_value;
          if (lo != ConstIntBound::kNegInf) add_fact(ge(v, make_const(v->dtype, lo)));
        }
        if (set.has_upper_bound()) {
          int64_t hi = analyzer_->const_int_bound(set.max()).max_value;
          if (hi != ConstIntBound::kPosInf) add_fact(le(v, make_const(v->dtype, hi)));
        }
      }
      scope_.emplace(analyzer_, condition.defined() ? condition : bool_const(true));
    }
    return IntSet::from_bound(analyzer_->const_int_bound(e), e->dtype.element_of());
  }

  const IntSetMap& dom_map_;
  Analyzer* analyzer_;
  std::optional<ConstraintScope> scope_;
};

IntSet simplify_ends(const IntSet& s, Analyzer* analyzer) {
  if (s.is_nothing()) return s;
  Expr lo = s.min().defined() ? analyzer->simplify(s.min()) : Expr();
  Expr hi = s.max().defined() ? analyzer->simplify(s.max()) : Expr();
  if (lo.defined() && hi.defined() && deep_equal(lo, hi)) hi = lo;
  return IntSet::interval(lo, hi);
}

}  // namespace

IntSet eval_set(const Expr& e, const IntSetMap& dom_map, Analyzer* analyzer) {
  internal_check(e.defined() && analyzer != nullptr) << "eval_set: null expression or analyzer";
  IntSet result;
  {
    SetEvaluator evaluator(dom_map, analyzer);
    result = evaluator.eval(e);
  }
  return simplify_ends(result, analyzer);
}

// ---------------------------------------------------------------------------------------------
// Regions

namespace {

Range cover_dimension(const IntSet& set, size_t dim, const std::vector<Expr>& shape,
                      Analyzer* analyzer) {
  if (set.has_lower_bound() && set.has_upper_bound()) return set.cover_range(analyzer);
  user_check(dim < shape.size())
      << "eval_region: the index set " << set << " of dimension " << dim
      << " is unbounded over the loop domains, and no buffer shape was given to bound it";
  return set.cover_range(Range{make_zero(shape[dim]->dtype), shape[dim]}, analyzer);
}

}  // namespace

std::vector<Range> eval_region(const std::vector<Range>& region, const IntSetMap& dom_map,
                               Analyzer* analyzer, const std::vector<Expr>& shape) {
  std::vector<Range> result;
  result.reserve(region.size());
  for (size_t d = 0; d < region.size(); ++d) {
    const Range& r = region[d];
    IntSet first = eval_set(analyzer->simplify(r.min), dom_map, analyzer);
    IntSet set = first;
    if (!is_const_int(r.extent, 1)) {
      IntSet last = eval_set(analyzer->simplify(r.min + r.extent - 1), dom_map, analyzer);
      set = first.is_nothing() || last.is_nothing() ? IntSet::nothing()
                                                    : IntSet::interval(first.min(), last.max());
    }
    result.push_back(cover_dimension(set, d, shape, analyzer));
  }
  return result;
}

std::vector<Range> eval_region(const std::vector<Expr>& indices, const IntSetMap& dom_map,
                               Analyzer* analyzer, const std::vector<Expr>& shape) {
  std::vector<Range> result;
  result.reserve(indices.size());
  for (size_t d = 0; d < indices.size(); ++d) {
    IntSet set = eval_set(analyzer->simplify(indices[d]), dom_map, analyzer);
    result.push_back(cover_dimension(set, d, shape, analyzer));
  }
  return result;
}

}  // namespace kiln::arith
