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

int Analyzer::Impl::known_truth(const Expr& cond) {
  for (const Fact& fact : facts) {
    if (deep_equal(fact.condition, cond)) return 1;
    if (const auto* n = fact.condition.as<Not>()) {
      if (deep_equal(n->a, cond)) return 0;
    }
    if (const auto* n = cond.as<Not>()) {
      if (deep_equal(n->a, fact.condition)) return 0;
    }
  }
  return -1;
}

}  // namespace kiln::arith
