// Constant integer bounds of expressions: interval arithmetic over every integer expression
// kind, starting from what the analyzer knows about variables and the ranges of dtypes.
#include <algorithm>
#include <ostream>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "src/arith/analyzer_impl.h"
#include "src/arith/int_math.h"

namespace kiln::arith {

using namespace ir;

std::ostream& operator<<(std::ostream& os, const ConstIntBound& bound) {
  os << '[';
  if (bound.min_value == kNegInf) {
    os << "-inf";
  } else {
    os << bound.min_value;
  }
  os << ", ";
  if (bound.max_value == kPosInf) {
    os << "+inf";
  } else {
    os << bound.max_value;
  }
  return os << ']';
}

namespace {

// Every value of a dtype; floats and handles give everything.
ConstIntBound dtype_bound(DataType t) {
  t = t.element_of();
  if (t.is_bool()) return {0, 1};
  if (t.is_int() && t.bits() < 64) {
    int64_t half = int64_t{1} << (t.bits() - 1);
    return {-half, half - 1};
  }
  if (t.is_uint()) {
    if (t.bits() >= 64) return {0, kPosInf};
    return {0, static_cast<int64_t>((uint64_t{1} << t.bits()) - 1)};
  }
  return ConstIntBound::everything();
}

ConstIntBound intersect(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::max(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
}

ConstIntBound unite(const ConstIntBound& a, const ConstIntBound& b) {
  return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
}

bool contains(const ConstIntBound& outer, const ConstIntBound& inner) {
  return outer.min_value <= inner.min_value && inner.max_value <= outer.max_value;
}

// Bounds of the four corner values of f over a box, for f monotone in each argument.
template <class F>
ConstIntBound corners(const ConstIntBound& a, const ConstIntBound& b, F f) {
  int64_t v[4] = {f(a.min_value, b.min_value), f(a.min_value, b.max_value),
                  f(a.max_value, b.min_value), f(a.max_value, b.max_value)};
  return {*std::min_element(v, v + 4), *std::max_element(v, v + 4)};
}

// a / b over the non-zero values of b (division by zero is undefined).
template <class F>
ConstIntBound divide(const ConstIntBound& a, ConstIntBound b, F f) {
  if (b.min_value == 0) b.min_value = 1;
  if (b.max_value == 0) b.max_value = -1;
  if (b.min_value > b.max_value) return ConstIntBound::everything();
  if (b.min_value < 0 && b.max_value > 0) {
    return unite(corners(a, ConstIntBound{b.min_value, -1}, f),
                 corners(a, ConstIntBound{1, b.max_value}, f));
  }
  return corners(a, b, f);
}

class BoundAnalyzer : public ExprFunctor<ConstIntBound> {
 public:
  explicit BoundAnalyzer(Analyzer::Impl* impl) : impl_(impl) {}

  ConstIntBound analyze(const Expr& e) {
    ConstIntBound b = dispatch(e);
    // An empty bound only arises for expressions that always overflow; say nothing then.
    if (b.min_value > b.max_value) return dtype_bound(e->dtype);
    return b;
  }

 private:
  // Signed results are clamped to the dtype (no overflow, see expr.h); unsigned results that
  // leave the dtype's range wrap, so they are the whole range.
  static ConstIntBound fit(const ConstIntBound& b, DataType t) {
    ConstIntBound range = dtype_bound(t);
    if (t.element_of().is_int()) {
      ConstIntBound r = intersect(b, range);
      return r.min_value > r.max_value ? range : r;
    }
    if (t.element_of().is_uint() || t.element_of().is_bool()) {
      return contains(range, b) ? b : range;
    }
    return ConstIntBound::everything();
  }

  static bool is_integer_like(DataType t) { return t.is_integer() || t.is_bool(); }

  ConstIntBound visit(const IntImm* op) override {
    if (op->dtype.is_uint() && op->dtype.bits() >= 64 && op->value < 0) {
      return dtype_bound(op->dtype);
    }
    return ConstIntBound::single(op->value);
  }
  ConstIntBound visit(const FloatImm*) override { return ConstIntBound::everything(); }
  ConstIntBound visit(const StringImm*) override { return ConstIntBound::everything(); }

  ConstIntBound visit(const Var* op) override {
    ConstIntBound b = dtype_bound(op->dtype);
    if (!is_integer_like(op->dtype)) return b;
    if (op->is_size_var) b.min_value = std::max<int64_t>(b.min_value, 0);
    auto let = let_bounds_.find(op);
    if (let != let_bounds_.end()) return intersect(b, let->second);
    if (const VarInfo* info = impl_->find(op)) b = intersect(b, info->bound);
    return b.min_value > b.max_value ? dtype_bound(op->dtype) : b;
  }

  ConstIntBound visit(const Add* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    return fit({bound_add(a.min_value, b.min_value), add_hi(a.max_value, b.max_value)}, op->dtype);
  }

  ConstIntBound visit(const Sub* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    return fit({bound_add(a.min_value, bound_neg(b.max_value)),
                add_hi(a.max_value, bound_neg(b.min_value))},
               op->dtype);
  }

  ConstIntBound visit(const Mul* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return fit(corners(analyze(op->a), analyze(op->b), bound_mul), op->dtype);
  }

  ConstIntBound visit(const FloorDiv* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return fit(divide(analyze(op->a), analyze(op->b), bound_floordiv), op->dtype);
  }

  ConstIntBound visit(const Div* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return fit(divide(analyze(op->a), analyze(op->b), bound_truncdiv), op->dtype);
  }

  ConstIntBound visit(const FloorMod* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    return fit(floormod_bound(a, b), op->dtype);
  }

  static ConstIntBound floormod_bound(const ConstIntBound& a, const ConstIntBound& b) {
    bool a_finite = a.min_value != kNegInf && a.max_value != kPosInf;
    if (b.is_single() && b.min_value != 0 && a_finite &&
        floordiv_int(a.min_value, b.min_value) == floordiv_int(a.max_value, b.min_value)) {
      // All of a lies in one period of b: floormod is a shifted by a constant.
      return {floormod_int(a.min_value, b.min_value), floormod_int(a.max_value, b.min_value)};
    }
    if (b.min_value > 0) {
      if (a.min_value >= 0 && a.max_value < b.min_value) return a;
      int64_t hi = bound_add(b.max_value, -1);
      if (a.min_value >= 0) hi = std::min(hi, a.max_value);
      return {0, hi};
    }
    if (b.max_value < 0) {
      if (a.max_value <= 0 && a.min_value > b.max_value) return a;
      int64_t lo = bound_add(b.min_value, 1);
      if (a.max_value <= 0) lo = std::max(lo, a.min_value);
      return {lo, 0};
    }
    return {std::min<int64_t>(bound_add(b.min_value, 1), 0),
            std::max<int64_t>(add_hi(b.max_value, -1), 0)};
  }

  ConstIntBound visit(const Mod* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    // |truncmod(a, b)| < |b| and it has the sign of a.
    int64_t b_abs = std::max(bound_abs(b.min_value), bound_abs(b.max_value));
    int64_t limit = b_abs == kPosInf ? kPosInf : b_abs - 1;
    int64_t lo = a.min_value >= 0 ? 0 : std::max(a.min_value, bound_neg(limit));
    int64_t hi = a.max_value <= 0 ? 0 : std::min(a.max_value, limit);
    return fit({lo, hi}, op->dtype);
  }

  ConstIntBound visit(const Min* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
  }

  ConstIntBound visit(const Max* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
  }

  // Comparisons are bools; one decided by the operands' bounds is a constant.
  template <class Node>
  ConstIntBound compare(const Node* op, int decided) {
    if (decided >= 0) return ConstIntBound::single(decided);
    return {0, 1};
  }
  // 1 / 0 when the bounds decide a < b (or a <= b with `or_equal`), -1 otherwise.
  int decide_less(const Expr& a_expr, const Expr& b_expr, bool or_equal) {
    if (!is_integer_like(a_expr->dtype)) return -1;
    ConstIntBound a = analyze(a_expr), b = analyze(b_expr);
    if (or_equal ? a.max_value <= b.min_value : a.max_value < b.min_value) return 1;
    if (or_equal ? a.min_value > b.max_value : a.min_value >= b.max_value) return 0;
    return -1;
  }
  int decide_equal(const Expr& a_expr, const Expr& b_expr) {
    if (!is_integer_like(a_expr->dtype)) return -1;
    ConstIntBound a = analyze(a_expr), b = analyze(b_expr);
    if (a.is_single() && b.is_single() && a.min_value == b.min_value && a.min_value != kNegInf &&
        a.min_value != kPosInf) {
      return 1;
    }
    if (a.max_value < b.min_value || b.max_value < a.min_value) return 0;
    return -1;
  }
  ConstIntBound visit(const EQ* op) override { return compare(op, decide_equal(op->a, op->b)); }
  ConstIntBound visit(const NE* op) override {
    int d = decide_equal(op->a, op->b);
    return compare(op, d < 0 ? -1 : 1 - d);
  }
  ConstIntBound visit(const LT* op) override {
    return compare(op, decide_less(op->a, op->b, false));
  }
  ConstIntBound visit(const LE* op) override {
    return compare(op, decide_less(op->a, op->b, true));
  }
  ConstIntBound visit(const GT* op) override {
    return compare(op, decide_less(op->b, op->a, false));
  }
  ConstIntBound visit(const GE* op) override {
    return compare(op, decide_less(op->b, op->a, true));
  }

  ConstIntBound visit(const And* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    return intersect(ConstIntBound{0, 1},
                     {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)});
  }
  ConstIntBound visit(const Or* op) override {
    ConstIntBound a = analyze(op->a), b = analyze(op->b);
    return intersect(ConstIntBound{0, 1},
                     {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)});
  }
  ConstIntBound visit(const Not* op) override {
    ConstIntBound a = intersect(analyze(op->a), ConstIntBound{0, 1});
    if (a.min_value > a.max_value) return {0, 1};
    return {1 - a.max_value, 1 - a.min_value};
  }

  ConstIntBound choose(const Expr& condition, const Expr& t, const Expr& f) {
    ConstIntBound c = analyze(condition);
    if (c.min_value > 0) return analyze(t);
    if (c.max_value == 0 && c.min_value == 0) return analyze(f);
    return unite(analyze(t), analyze(f));
  }

  ConstIntBound visit(const Select* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    return choose(op->condition, op->true_value, op->false_value);
  }

  ConstIntBound visit(const Cast* op) override {
    DataType to = op->dtype, from = op->value->dtype;
    if (!is_integer_like(to)) return ConstIntBound::everything();
    if (!is_integer_like(from)) return dtype_bound(to);
    ConstIntBound a = analyze(op->value);
    if (to.is_bool()) {
      if (a.min_value > 0 || a.max_value < 0) return ConstIntBound::single(1);
      if (a.min_value == 0 && a.max_value == 0) return ConstIntBound::single(0);
      return {0, 1};
    }
    ConstIntBound range = dtype_bound(to);
    return contains(range, a) ? a : range;
  }

  ConstIntBound visit(const Call* op) override {
    if (!is_integer_like(op->dtype)) return ConstIntBound::everything();
    DataType t = op->dtype;
    switch (op->op) {
      case Builtin::IfThenElse:
        return choose(op->args[0], op->args[1], op->args[2]);
      case Builtin::Likely:
        return analyze(op->args[0]);
      case Builtin::Abs: {
        ConstIntBound a = analyze(op->args[0]);
        if (a.min_value >= 0) return a;
        if (a.max_value <= 0) return fit({bound_neg(a.max_value), bound_neg(a.min_value)}, t);
        return fit({0, std::max(bound_neg(a.min_value), a.max_value)}, t);
      }
      case Builtin::ShiftLeft:
      case Builtin::ShiftRight: {
        ConstIntBound a = analyze(op->args[0]), s = analyze(op->args[1]);
        // Shifts by a negative or too large amount are undefined.
        int bits = t.bits();
        s = intersect(s, ConstIntBound{0, bits - 1});
        if (s.min_value > s.max_value || s.max_value >= 63) return dtype_bound(t);
        ConstIntBound factor{int64_t{1} << s.min_value, int64_t{1} << s.max_value};
        if (op->op == Builtin::ShiftLeft) return fit(corners(a, factor, bound_mul), t);
        if (t.is_uint() && a.min_value < 0) return dtype_bound(t);
        return fit(corners(a, factor, bound_floordiv), t);
      }
      case Builtin::BitwiseAnd: {
        ConstIntBound a = analyze(op->args[0]), b = analyze(op->args[1]);
        if (a.min_value >= 0 && b.min_value >= 0) return {0, std::min(a.max_value, b.max_value)};
        if (a.min_value >= 0) return {0, a.max_value};
        if (b.min_value >= 0) return {0, b.max_value};
        return dtype_bound(t);
      }
      case Builtin::BitwiseOr:
      case Builtin::BitwiseXor: {
        ConstIntBound a = analyze(op->args[0]), b = analyze(op->args[1]);
        if (a.min_value < 0 || b.min_value < 0) return dtype_bound(t);
        int64_t m = std::max(a.max_value, b.max_value);
        if (m == kPosInf) return fit({0, kPosInf}, t);
        int64_t all_ones = 0;
        while (all_ones < m) all_ones = all_ones * 2 + 1;
        int64_t lo = op->op == Builtin::BitwiseOr ? std::max(a.min_value, b.min_value) : 0;
        return fit({lo, all_ones}, t);
      }
      case Builtin::BitwiseNot: {
        if (!t.is_int()) return dtype_bound(t);
        ConstIntBound a = analyze(op->args[0]);
        // ~a == -a - 1.
        return fit({bound_add(bound_neg(a.max_value), -1), add_hi(bound_neg(a.min_value), -1)}, t);
      }
      case Builtin::Popcount:
        return {0, op->args[0]->dtype.bits()};
      default:
        return dtype_bound(t);
    }
  }

  ConstIntBound visit(const Ramp* op) override {
    ConstIntBound base = analyze(op->base), stride = analyze(op->stride);
    ConstIntBound steps{0, op->lanes - 1};
    ConstIntBound offset = corners(stride, steps, bound_mul);
    return fit(
        {bound_add(base.min_value, offset.min_value), add_hi(base.max_value, offset.max_value)},
        op->dtype);
  }

  ConstIntBound visit(const Broadcast* op) override { return analyze(op->value); }

  ConstIntBound visit(const Let* op) override {
    ConstIntBound value = analyze(op->value);
    auto saved = let_bounds_.find(op->var.get());
    bool had = saved != let_bounds_.end();
    ConstIntBound old = had ? saved->second : ConstIntBound{};
    let_bounds_[op->var.get()] = value;
    ConstIntBound body = analyze(op->body);
    if (had) {
      let_bounds_[op->var.get()] = old;
    } else {
      let_bounds_.erase(op->var.get());
    }
    return body;
  }

  ConstIntBound visit(const BufferLoad* op) override { return dtype_bound(op->dtype); }
  ConstIntBound visit(const Reduce* op) override { return dtype_bound(op->dtype); }

  // The upper end of a + b: like bound_add, but +inf wins over -inf.
  static int64_t add_hi(int64_t a, int64_t b) {
    if (a == kPosInf || b == kPosInf) return kPosInf;
    return bound_add(a, b);
  }
  static int64_t bound_abs(int64_t a) { return a < 0 ? bound_neg(a) : a; }

  Analyzer::Impl* impl_;
  std::unordered_map<const Var*, ConstIntBound> let_bounds_;
};

}  // namespace

ConstIntBound Analyzer::Impl::bound(const Expr& e) {
  return BoundAnalyzer(this).analyze(e);
}

}  // namespace kiln::arith
