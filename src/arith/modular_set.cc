// Modular sets of integer expressions: each expression is described as coeff * k + base, which
// tells the simplifier when a floormod is constant or a floordiv is exact.
#include <ostream>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "src/arith/analyzer_impl.h"
#include "src/arith/int_math.h"

namespace kiln::arith {

using namespace ir;

std::ostream& operator<<(std::ostream& os, const ModularSet& set) {
  return os << '{' << set.coeff << " * k + " << set.base << '}';
}

namespace {

const ModularSet kEverything = ModularSet::everything();

// The set with base reduced into [0, coeff); everything when the numbers do not fit.
ModularSet make_set(std::optional<int64_t> coeff, std::optional<int64_t> base) {
  if (!coeff || !base || *coeff < 0) return kEverything;
  if (*coeff == 0) return ModularSet::constant(*base);
  return {*coeff, floormod_int(*base, *coeff)};
}

std::optional<int64_t> gcd3(std::optional<int64_t> a, std::optional<int64_t> b,
                            std::optional<int64_t> c) {
  if (!a || !b || !c) return std::nullopt;
  std::optional<int64_t> g = gcd_int(*a, *b);
  if (!g) return std::nullopt;
  return gcd_int(*g, *c);
}

// The smallest set holding both: values that agree modulo gcd(c1, c2, b1 - b2).
ModularSet unite(const ModularSet& a, const ModularSet& b) {
  std::optional<int64_t> diff = checked_sub(a.base, b.base);
  return make_set(gcd3(a.coeff, b.coeff, diff), a.base);
}

class ModularAnalyzer : public ExprFunctor<ModularSet> {
 public:
  explicit ModularAnalyzer(Analyzer::Impl* impl) : impl_(impl) {}

  ModularSet analyze(const Expr& e) {
    if (!e->dtype.is_int() && !e->dtype.is_uint()) return kEverything;
    return dispatch(e);
  }

 private:
  ModularSet visit(const IntImm* op) override { return ModularSet::constant(op->value); }

  ModularSet visit(const Var* op) override {
    auto let = let_sets_.find(op);
    if (let != let_sets_.end()) return let->second;
    if (const VarInfo* info = impl_->find(op)) return info->modular;
    return kEverything;
  }

  // Unsigned arithmetic wraps modulo 2^bits, which keeps only power-of-two facts; the
  // analysis is used on signed index arithmetic, so unsigned results say nothing.
  bool wraps(DataType t) const { return !t.is_int(); }

  ModularSet visit(const Add* op) override {
    if (wraps(op->dtype)) return kEverything;
    ModularSet a = analyze(op->a), b = analyze(op->b);
    std::optional<int64_t> coeff = gcd_int(a.coeff, b.coeff);
    return make_set(coeff, checked_add(a.base, b.base));
  }

  ModularSet visit(const Sub* op) override {
    if (wraps(op->dtype)) return kEverything;
    ModularSet a = analyze(op->a), b = analyze(op->b);
    std::optional<int64_t> coeff = gcd_int(a.coeff, b.coeff);
    return make_set(coeff, checked_sub(a.base, b.base));
  }

  ModularSet visit(const Mul* op) override {
    if (wraps(op->dtype)) return kEverything;
    ModularSet a = analyze(op->a), b = analyze(op->b);
    // (c1 k1 + b1)(c2 k2 + b2) = c1 c2 k1 k2 + c1 b2 k1 + c2 b1 k2 + b1 b2.
    std::optional<int64_t> coeff = gcd3(checked_mul(a.coeff, b.coeff), checked_mul(a.coeff, b.base),
                                        checked_mul(b.coeff, a.base));
    return make_set(coeff, checked_mul(a.base, b.base));
  }

  // The divisor when it is a known non-zero constant.
  std::optional<int64_t> const_divisor(const Expr& b) {
    ModularSet m = analyze(b);
    if (m.coeff != 0 || m.base == 0) return std::nullopt;
    return m.base;
  }

  ModularSet visit(const FloorDiv* op) override {
    if (wraps(op->dtype)) return kEverything;
    std::optional<int64_t> c = const_divisor(op->b);
    if (!c) return kEverything;
    ModularSet a = analyze(op->a);
    // floordiv(coeff k + base, c) = (coeff / c) k + floordiv(base, c) when c divides coeff.
    if (a.coeff % *c != 0) return kEverything;
    std::optional<int64_t> coeff = checked_div_abs(a.coeff, *c);
    if (*c == -1) return make_set(coeff, checked_neg(a.base));
    return make_set(coeff, floordiv_int(a.base, *c));
  }

  ModularSet visit(const Div* op) override {
    if (wraps(op->dtype)) return kEverything;
    std::optional<int64_t> c = const_divisor(op->b);
    if (!c) return kEverything;
    ModularSet a = analyze(op->a);
    // Only an exact division keeps the structure: truncdiv(coeff k, c) = (coeff / c) k.
    if (a.coeff == 0) {
      if (*c == -1) return make_set(0, checked_neg(a.base));
      return ModularSet::constant(truncdiv_int(a.base, *c));
    }
    if (a.coeff % *c != 0 || a.base != 0) return kEverything;
    return make_set(checked_div_abs(a.coeff, *c), 0);
  }

  // floormod and truncmod by c both differ from their operand by a multiple of c.
  ModularSet remainder(const Expr& a_expr, const Expr& b_expr, bool floor) {
    std::optional<int64_t> c = const_divisor(b_expr);
    if (!c) return kEverything;
    ModularSet a = analyze(a_expr);
    if (a.coeff == 0) {
      return ModularSet::constant(floor ? floormod_int(a.base, *c) : truncmod_int(a.base, *c));
    }
    if (floor && a.coeff % *c == 0) return ModularSet::constant(floormod_int(a.base, *c));
    return make_set(gcd_int(a.coeff, *c), a.base);
  }
  ModularSet visit(const FloorMod* op) override {
    if (wraps(op->dtype)) return kEverything;
    return remainder(op->a, op->b, true);
  }
  ModularSet visit(const Mod* op) override {
    if (wraps(op->dtype)) return kEverything;
    return remainder(op->a, op->b, false);
  }

  ModularSet visit(const Min* op) override { return unite(analyze(op->a), analyze(op->b)); }
  ModularSet visit(const Max* op) override { return unite(analyze(op->a), analyze(op->b)); }
  ModularSet visit(const Select* op) override {
    return unite(analyze(op->true_value), analyze(op->false_value));
  }

  ModularSet visit(const Call* op) override {
    if (op->op == Builtin::IfThenElse) return unite(analyze(op->args[1]), analyze(op->args[2]));
    if (op->op == Builtin::ShiftLeft && op->dtype.is_int()) {
      const int64_t* s = as_const_int(op->args[1]);
      if (s == nullptr || *s < 0 || *s >= op->dtype.bits() || *s >= 62) return kEverything;
      ModularSet a = analyze(op->args[0]);
      int64_t f = int64_t{1} << *s;
      return make_set(checked_mul(a.coeff, f), checked_mul(a.base, f));
    }
    return kEverything;
  }

  ModularSet visit(const Cast* op) override {
    // A signed value that fits in the target type keeps its value.
    DataType to = op->dtype, from = op->value->dtype;
    if (!to.is_int() || !(from.is_int() || from.is_uint())) return kEverything;
    if (from.is_int() && to.bits() >= from.bits()) return analyze(op->value);
    if (from.is_uint() && to.bits() > from.bits()) return analyze(op->value);
    return kEverything;
  }

  ModularSet visit(const Let* op) override {
    ModularSet value = analyze(op->value);
    auto saved = let_sets_.find(op->var.get());
    bool had = saved != let_sets_.end();
    ModularSet old = had ? saved->second : ModularSet{};
    let_sets_[op->var.get()] = value;
    ModularSet body = analyze(op->body);
    if (had) {
      let_sets_[op->var.get()] = old;
    } else {
      let_sets_.erase(op->var.get());
    }
    return body;
  }

  ModularSet visit(const Broadcast* op) override { return analyze(op->value); }
  ModularSet visit(const Ramp* op) override {
    ModularSet base = analyze(op->base), stride = analyze(op->stride);
    // base + stride * l for l in [0, lanes): the union over the lanes.
    return unite(base,
                 make_set(gcd_int(base.coeff, stride.coeff), checked_add(base.base, stride.base)));
  }

#define KILN_NOTHING_KNOWN(Name)           \
  ModularSet visit(const Name*) override { \
    return kEverything;                    \
  }
  KILN_NOTHING_KNOWN(FloatImm)
  KILN_NOTHING_KNOWN(StringImm)
  KILN_NOTHING_KNOWN(EQ)
  KILN_NOTHING_KNOWN(NE)
  KILN_NOTHING_KNOWN(LT)
  KILN_NOTHING_KNOWN(LE)
  KILN_NOTHING_KNOWN(GT)
  KILN_NOTHING_KNOWN(GE)
  KILN_NOTHING_KNOWN(And)
  KILN_NOTHING_KNOWN(Or)
  KILN_NOTHING_KNOWN(Not)
  KILN_NOTHING_KNOWN(BufferLoad)
  KILN_NOTHING_KNOWN(Reduce)
#undef KILN_NOTHING_KNOWN

  static std::optional<int64_t> checked_div_abs(int64_t a, int64_t c) {
    if (c == -1)
      return checked_neg(a).has_value() ? std::optional<int64_t>(a < 0 ? -a : a) : std::nullopt;
    int64_t q = a / c;
    return q < 0 ? -q : q;
  }

  Analyzer::Impl* impl_;
  std::unordered_map<const Var*, ModularSet> let_sets_;
};

}  // namespace

ModularSet Analyzer::Impl::modular(const Expr& e) {
  return ModularAnalyzer(this).analyze(e);
}

}  // namespace kiln::arith
