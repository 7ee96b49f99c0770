// Analyzer: kiln's arithmetic analysis of integer (index) expressions. It knows facts about
// variables (ranges, values, scoped conditions) and answers with integer bounds, modular sets,
// proofs of comparisons, and simplified expressions and statements.
//
// What the analysis assumes, beyond the semantics in kiln/ir/expr.h:
//  * Signed integer arithmetic on indices does not overflow (see expr.h). Bounds, proofs and
//    rewrites of signed integer expressions are exact under that assumption; where an original
//    expression would overflow, the simplified one may differ.
//  * Unsigned integers wrap by design, so they get only rewrites that hold modulo 2^bits
//    (constant folding, x + 0, x * 1, x - x ...). Floats get only exact constant folding.
//  * Division by zero is undefined: a rewrite may assume a divisor it keeps is not zero.
//
// Example:
//   Analyzer ana;
//   ana.bind(j, Range{int32_const(0), int32_const(8)});
//   ana.simplify(floormod(i * 8 + j, 8));  // j
//   {
//     auto scope = ana.enter_constraint(lt(i, n));
//     ana.can_prove(lt(i, n + 1));         // true
//   }
#pragma once

#include <cstdint>
#include <memory>

#include "kiln/arith/const_int_bound.h"
#include "kiln/arith/modular_set.h"
#include "kiln/ir/stmt.h"

namespace kiln::arith {

class ConstraintScope;

// One Analyzer holds the facts of one context; it is not safe to use from several threads at
// once (give each thread its own).
class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // ------------------------------------------------------------------------------------------
  // Facts about variables. A fact given here holds for the analyzer's whole life; binding a
  // variable again with different information is a kValue error unless `allow_override`.

  // v lies in [range.min, range.min + range.extent). Symbolic ranges are recorded as the
  // conditions `min <= v` and `v < min + extent`; a range of extent 1 binds v to its min. v's
  // constant bound ends at the least of max(min) + max(extent) - 1 and max(min + extent) - 1,
  // min + extent simplified (a range from a to a + (b - a) ends at b whatever a is).
  void bind(const ir::Ref<ir::Var>& v, const ir::Range& range, bool allow_override = false);
  // v equals `value` (simplified and substituted for v by the simplifiers).
  void bind(const ir::Ref<ir::Var>& v, const ir::Expr& value, bool allow_override = false);
  // Adds a bound of v: it is intersected with what is known, or replaces it with
  // `allow_override`.
  void update(const ir::Ref<ir::Var>& v, const ConstIntBound& bound, bool allow_override = false);
  // Adds what v is modulo a constant (replaces what is known with `allow_override`).
  void update(const ir::Ref<ir::Var>& v, const ModularSet& info, bool allow_override = false);

  // ------------------------------------------------------------------------------------------
  // Analyses.

  // Constant bounds of an integer or bool expression (everything for floats and handles).
  // A vector expression gets the bound over all its lanes.
  ConstIntBound const_int_bound(const ir::Expr& e);
  // What an integer expression is modulo a constant.
  ModularSet modular_set(const ir::Expr& e);

  // ------------------------------------------------------------------------------------------
  // Simplification. Each returns the very same node when nothing changed.

  // Local rewrite rules by node kind (rewrite_*.cc): constant folding, algebraic identities,
  // comparisons decided by bounds and known conditions, min/max, select and logic.
  ir::Expr rewrite_simplify(const ir::Expr& e);
  // Normalizes integer index expressions into sums of scaled terms, each term a variable or an
  // expression with floordiv/floormod by constants, so that e.g. `(x*4 + y) // 4` with
  // 0 <= y < 4 becomes x and `floordiv(x, 4)*4 + floormod(x, 4)` becomes x.
  ir::Expr canonical_simplify(const ir::Expr& e);
  // Both simplifiers, alternated until nothing changes (at most `max_rounds` rounds).
  ir::Expr simplify(const ir::Expr& e, int max_rounds = 4);
  // Simplifies every expression of a statement: loop variables are bound to their ranges, the
  // condition of an IfThenElse holds in its then branch and its negation in the else branch,
  // LetStmt values are bound, AssertStmt conditions hold after the assert; a condition that
  // simplifies to a constant selects its branch. Returns the same node when nothing changed.
  ir::Stmt simplify(const ir::Stmt& s);

  // ------------------------------------------------------------------------------------------
  // Proofs. false means "could not prove", not "proved false".

  // Whether the bool expression is true for every value of its variables allowed by the facts.
  bool can_prove(const ir::Expr& cond);
  bool can_prove_greater_equal(const ir::Expr& e, int64_t c);
  bool can_prove_less(const ir::Expr& e, int64_t c);
  bool can_prove_equal(const ir::Expr& a, const ir::Expr& b);

  // ------------------------------------------------------------------------------------------
  // Scoped facts.

  // Makes `condition` known to hold until the returned scope ends (scopes end in reverse
  // order of entering). Conjunctions are split; a comparison of a variable with an expression
  // of known bounds also tightens the variable's bound, and `floormod(v, c) == r` its modular
  // set.
  [[nodiscard]] ConstraintScope enter_constraint(const ir::Expr& condition);
  // Binds v to [range.min, range.min + range.extent) until the returned scope ends, over what
  // was known of v (as bind with allow_override): a loop variable while its body is visited.
  // The conditions of a symbolic range leave with the scope, so that the loops visited after it
  // do not carry them into every later proof.
  [[nodiscard]] ConstraintScope enter_range(const ir::Ref<ir::Var>& v, const ir::Range& range);

  // The private state, shared by the analyses in src/arith.
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// While alive, the condition it was made with is known to the analyzer; see
// Analyzer::enter_constraint. Usage: `ConstraintScope scope(&analyzer, lt(i, n));`.
class ConstraintScope {
 public:
  ConstraintScope(Analyzer* analyzer, const ir::Expr& condition);
  ConstraintScope(Analyzer* analyzer, const ir::Ref<ir::Var>& v, const ir::Range& range);
  ~ConstraintScope();
  ConstraintScope(const ConstraintScope&) = delete;
  ConstraintScope& operator=(const ConstraintScope&) = delete;

 private:
  Analyzer* analyzer_;
  size_t depth_;
};

}  // namespace kiln::arith
