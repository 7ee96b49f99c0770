// Proofs from facts: an integer expression is non-negative when its bound says so, or when its
// difference with an expression known to be non-negative (from a bound range or a scoped
// condition) has a non-negative bound. Conditions that are not arithmetic are matched
// literally.
#include "kiln/ir/op.h"
#include "src/arith/analyzer_impl.h"
#include "src/arith/expr_compare.h"

namespace kiln::arith {

using namespace ir;

bool Analyzer::Impl::prove_nonneg(const Expr& e) {
  Expr d = canonical(e);
  if (const int64_t* c = as_const_int(d)) return *c >= 0;
  if (bound(d).min_value >= 0) return true;
  for (const Fact& fact : facts) {
    if (!fact.nonneg.defined()) continue;
    // d >= d - f >= 0 when d - f >= 0 and f >= 0.
    Expr diff = canonical(sub(d, fact.nonneg));
    if (bound(diff).min_value >= 0) return true;
  }
  return false;
}

namespace {

// The negation of a condition written as a condition, or null: !x is x, a == b is a != b, and
// for non-float operands a < b is b <= a.
Expr negated(const Expr& cond) {
  if (const auto* n = cond.as<Not>()) return n->a;
  const auto* bin = cond.is<EQ>() || cond.is<NE>() || cond.is<LT>() || cond.is<LE>() ||
                            cond.is<GT>() || cond.is<GE>()
                        ? static_cast<const BinaryNode*>(cond.get())
                        : nullptr;
  if (bin == nullptr) return nullptr;
  DataType t = cond->dtype;
  if (cond.is<EQ>()) return make<NE>(t, bin->a, bin->b);
  if (cond.is<NE>()) return make<EQ>(t, bin->a, bin->b);
  if (bin->a->dtype.is_float()) return nullptr;
  if (cond.is<LT>()) return make<LE>(t, bin->b, bin->a);
  if (cond.is<LE>()) return make<LT>(t, bin->b, bin->a);
  if (cond.is<GT>()) return make<LE>(t, bin->a, bin->b);
  return make<LT>(t, bin->a, bin->b);
}

}  // namespace

int Analyzer::Impl::known_truth(const Expr& cond) {
  Expr negation;
  bool negation_built = false;
  for (const Fact& fact : facts) {
    if (deep_equal(fact.condition, cond)) return 1;
    if (const auto* n = fact.condition.as<Not>()) {
      if (deep_equal(n->a, cond)) return 0;
    }
    if (!negation_built) {
      negation = negated(cond);
      negation_built = true;
    }
    if (negation.defined() && deep_equal(fact.condition, negation)) return 0;
  }
  return -1;
}

}  // namespace kiln::arith
