// The rewrite simplifier: a mutator that simplifies the children of a node, then applies the
// rules of the node's kind, written with the patterns of pattern.h. The rules live in one file
// per family of node kinds:
//   rewrite_add.cc       Add, Sub
//   rewrite_mul.cc       Mul
//   rewrite_div_mod.cc   Div, Mod, FloorDiv, FloorMod
//   rewrite_min_max.cc   Min, Max
//   rewrite_compare.cc   EQ, NE, LT, LE, GT, GE
//   rewrite_logical.cc   And, Or, Not
//   rewrite_select.cc    Select and the if_then_else builtin
//   rewrite_vector.cc    binary nodes of vector dtype (ramps and broadcasts)
//   rewrite_simplify.cc  variables, casts, lets, other calls, vectors; the shared helpers
// Algebraic rules apply to signed scalar integers (no overflow, see analyzer.h); unsigned
// integers get the rules that hold modulo 2^bits; floats only constant folding.
#pragma once

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "src/arith/analyzer_impl.h"
#include "src/arith/pattern.h"

namespace kiln::arith {

class RewriteSimplifier : public ir::IRMutator {
 public:
  explicit RewriteSimplifier(Analyzer::Impl* impl) : impl_(impl) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  ir::Expr visit(const ir::Var* op) override;
  ir::Expr visit(const ir::Add* op) override;
  ir::Expr visit(const ir::Sub* op) override;
  ir::Expr visit(const ir::Mul* op) override;
  ir::Expr visit(const ir::Div* op) override;
  ir::Expr visit(const ir::Mod* op) override;
  ir::Expr visit(const ir::FloorDiv* op) override;
  ir::Expr visit(const ir::FloorMod* op) override;
  ir::Expr visit(const ir::Min* op) override;
  ir::Expr visit(const ir::Max* op) override;
  ir::Expr visit(const ir::EQ* op) override;
  ir::Expr visit(const ir::NE* op) override;
  ir::Expr visit(const ir::LT* op) override;
  ir::Expr visit(const ir::LE* op) override;
  ir::Expr visit(const ir::GT* op) override;
  ir::Expr visit(const ir::GE* op) override;
  ir::Expr visit(const ir::And* op) override;
  ir::Expr visit(const ir::Or* op) override;
  ir::Expr visit(const ir::Not* op) override;
  ir::Expr visit(const ir::Select* op) override;
  ir::Expr visit(const ir::Cast* op) override;
  ir::Expr visit(const ir::Call* op) override;
  ir::Expr visit(const ir::Let* op) override;
  ir::Expr visit(const ir::Broadcast* op) override;
  ir::Expr visit(const ir::Ramp* op) override;
  // The if_then_else builtin (rewrite_select.cc); other calls are in rewrite_simplify.cc.
  ir::Expr visit_if_then_else(const ir::Call* op);

 private:
  // ------------------------------------------------------------------------------------------
  // Helpers shared by the rule files (rewrite_simplify.cc).

  // The node with new children, built with the op.h builders (which fold constants); the node
  // itself when the children did not change and are not both constants.
  template <class Node>
  ir::Expr rebuild(const Node* op, const ir::Expr& a, const ir::Expr& b) {
    bool constants = (a.is<ir::IntImm>() && b.is<ir::IntImm>()) ||
                     (a.is<ir::FloatImm>() && b.is<ir::FloatImm>());
    if (a.same_as(op->a) && b.same_as(op->b) && !constants) {
      return ir::Expr(op);
    }
    return pattern::detail::build<Node>(a, b);
  }

  // Simplifies the result of a rule again (its parts may now meet other rules), up to a depth.
  ir::Expr resimplify(const ir::Expr& e);

  // A signed scalar integer: the full rule set applies.
  static bool is_index(const ir::Expr& e) { return e->dtype.is_int() && e->dtype.is_scalar(); }
  // A signed or unsigned scalar integer.
  static bool is_scalar_integer(const ir::Expr& e) {
    return e->dtype.is_integer() && e->dtype.is_scalar();
  }

  ConstIntBound bound(const ir::Expr& e) { return impl_->bound(e); }
  // Whether a comparison of signed integers (built by a rule) holds, from bounds and facts.
  bool prove(const ir::Expr& cond);
  bool prove_le(const ir::Expr& a, const ir::Expr& b);

  // A side condition of a rule: the comparison pattern `p` proved (lazily, after a match).
  template <class P>
  auto can_prove(const P& p) {
    return pattern::when([this, p] { return prove(p.eval(ir::DataType::bool_())); });
  }

  // `e` simplified knowing that `fact` holds, for an operand that is evaluated whether or not
  // the fact holds (And, Or, Select). Simplifying under a fact may change the value of `e`
  // where the fact is false, so an operand with a division by a non-constant divisor is
  // simplified without the fact: that divisor could become zero there.
  ir::Expr mutate_assuming(const ir::Expr& e, const ir::Expr& fact);
  // The simplified negation of a condition.
  ir::Expr negation(const ir::Expr& cond) { return mutate(ir::logical_not(cond)); }

  // A bool result replaced by a constant when a known condition decides it.
  ir::Expr decide_by_facts(const ir::Expr& e);

  // The rules for a binary node of vector dtype (rewrite_vector.cc).
  ir::Expr rewrite_vector(const ir::Expr& e);

  // The comparison `a kind b` of signed integers in normal form, or decided (rewrite_compare).
  ir::Expr compare_index(ir::NodeKind kind, const ir::Expr& a, const ir::Expr& b);

  // Whether the value of `e` lies in [lo, hi] by its bound.
  bool in_range(const ir::Expr& e, int64_t lo, int64_t hi) {
    ConstIntBound b = bound(e);
    return b.min_value >= lo && b.max_value <= hi;
  }

  Analyzer::Impl* impl_;
};

}  // namespace kiln::arith
