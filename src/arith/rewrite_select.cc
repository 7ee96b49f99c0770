// Rewrite rules for Select and the if_then_else builtin: each arm is simplified knowing that
// the condition holds (true arm) or not (false arm); a constant condition picks its arm.
#include "src/arith/rewrite_simplify.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

Expr RewriteSimplifier::visit(const Select* op) {
  Expr c = mutate(op->condition);
  // Both arms are evaluated: an arm simplified under the condition must not trap when the
  // condition is false (mutate_assuming sees to that).
  Expr t = mutate_assuming(op->true_value, c);
  Expr f = mutate_assuming(op->false_value, negation(c));
  bool same = c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value) &&
              !c.is<IntImm>();
  Expr e = same ? Expr(op) : select(c, t, f);
  if (!e.is<Select>()) return e;
  PVar x, y, z;
  Rewriter rewrite(e);
  if (rewrite(select(x, y, y), y)) return rewrite.result();
  if (rewrite(select(!x, y, z), select(x, z, y))) return resimplify(rewrite.result());
  // clang-format off
  if (is_index(e) &&
      (rewrite(select(x < y, x, y), min(x, y)) ||
       rewrite(select(x < y, y, x), max(x, y)) ||
       rewrite(select(x <= y, x, y), min(x, y)) ||
       rewrite(select(x <= y, y, x), max(x, y)))) {
    return resimplify(rewrite.result());
  }
  // clang-format on
  return e;
}

namespace {

// A number: no fact about a condition can simplify it.
bool is_number(const Expr& e) {
  return e.is<IntImm>() || e.is<FloatImm>();
}

}  // namespace

Expr RewriteSimplifier::visit_if_then_else(const Call* op) {
  Expr c = mutate(op->args[0]);
  Expr t, f;
  if (!c.is<IntImm>()) {
    // An arm that is a number (the padding value of a guarded load) needs no facts; the
    // negated condition, simplified only for them, costs as much as the condition.
    if (is_number(op->args[1])) {
      t = op->args[1];
    } else {
      FactScope scope(impl_, c);
      t = mutate(op->args[1]);
    }
    if (is_number(op->args[2])) {
      f = op->args[2];
    } else {
      FactScope scope(impl_, mutate(logical_not(c)));
      f = mutate(op->args[2]);
    }
  } else {
    t = mutate(op->args[1]);
    f = mutate(op->args[2]);
  }
  if (const int64_t* value = as_const_int(c)) return *value != 0 ? t : f;
  // Both arms equal: evaluating either one is the same.
  if (deep_equal(t, f)) return t;
  if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) return op;
  return make<Call>(op->dtype, Builtin::IfThenElse, std::vector<Expr>{c, t, f});
}

}  // namespace kiln::arith
