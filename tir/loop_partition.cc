// loop_partition: splits loops at the points where an affine bound check in their body becomes
// (or stops being) provably true or provably false, and decides the check in the parts where it
// is known.
#include "kiln/tir/loop_partition.h"

#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "tir/pass_util.h"
#include "tir/renew_definitions.h"

namespace kiln::tir {

using namespace ir;

namespace {

struct LoopInfo {
  Ref<Var> var;
  Range range;
};

// A comparison that can split a loop v: it holds exactly when k * v + h >= 0, and h_min and
// h_max are the least and the greatest value of h over the loops between v and the comparison.
struct Candidate {
  Expr atom;
  int64_t k;
  Expr h_min;
  Expr h_max;
};

// `T.evaluate(0)`, the statement without effect that a check decided false leaves.
Stmt no_op() {
  return make<Evaluate>(int32_const(0));
}

bool is_no_op(const Stmt& s) {
  const auto* e = s.as<Evaluate>();
  return e != nullptr && e->value.is<IntImm>();
}

// The comparisons that `condition` is a conjunction of, looking through likely().
void split_conjunction(const Expr& condition, std::vector<Expr>* atoms) {
  if (const auto* call = condition.as<Call>(); call != nullptr && call->op == Builtin::Likely) {
    split_conjunction(call->args[0], atoms);
  } else if (const auto* both = condition.as<And>()) {
    split_conjunction(both->a, atoms);
    split_conjunction(both->b, atoms);
  } else {
    atoms->push_back(condition);
  }
}

bool has_likely(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Node* node) {
    if (node->kind() == NodeKind::Call && static_cast<const Call*>(node)->op == Builtin::Likely) {
      found = true;
    }
  });
  return found;
}

bool uses(const Expr& e, const Var* var) {
  return uses_var(e, [var](const Var* v) { return v == var; });
}

// Finds the comparisons in the body of `loop` that can split it (see Candidate).
class CandidateCollector : public IRVisitor {
 public:
  // `ana` knows the loops around `loop` (LoopPartitioner binds them as it enters them).
  CandidateCollector(const For* loop, arith::Analyzer* ana, const std::vector<Expr>& excluded)
      : loop_(loop), excluded_(excluded), ana_(*ana) {
    post_order_visit(loop->body, [&](const Node* node) {
      switch (node->kind()) {
        case NodeKind::For:
          defined_inside_.insert(static_cast<const For*>(node)->loop_var.get());
          break;
        case NodeKind::LetStmt:
          defined_inside_.insert(static_cast<const LetStmt*>(node)->var.get());
          break;
        case NodeKind::Let:
          defined_inside_.insert(static_cast<const Let*>(node)->var.get());
          break;
        case NodeKind::Allocate:
          defined_inside_.insert(static_cast<const Allocate*>(node)->buffer->data.get());
          break;
        default:
          break;
      }
    });
  }

  std::vector<Candidate> collect() {
    arith::ConstraintScope scope(&ana_, loop_->loop_var, Range{loop_->min, loop_->extent});
    visit_stmt(loop_->body);
    return std::move(found_);
  }

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    inner_.push_back({op->loop_var, Range{op->min, op->extent}});
    arith::ConstraintScope scope(&ana_, op->loop_var, Range{op->min, op->extent});
    visit_stmt(op->body);
    inner_.pop_back();
  }

  void visit(const IfThenElse* op) override {
    consider(op->condition);
    IRVisitor::visit(op);
  }

  void visit(const Call* op) override {
    if (op->op == Builtin::IfThenElse && has_likely(op->args[0])) consider(op->args[0]);
    IRVisitor::visit(op);
  }

 private:
  void consider(const Expr& condition) {
    std::vector<Expr> atoms;
    split_conjunction(condition, &atoms);
    for (const Expr& atom : atoms) {
      if (known(atom)) continue;
      if (auto candidate = analyze(atom)) found_.push_back(*candidate);
    }
  }

  bool known(const Expr& atom) const {
    for (const Expr& e : excluded_) {
      if (structural_equal(e, atom)) return true;
    }
    for (const Candidate& c : found_) {
      if (structural_equal(c.atom, atom)) return true;
    }
    return false;
  }

  std::optional<Candidate> analyze(const Expr& atom) {
    const Var* v = loop_->loop_var.get();
    Expr g = as_nonnegative(atom);
    if (!g.defined() || !uses(g, v)) return std::nullopt;
    // Variables defined inside the loop may appear only when they are enclosing loops here.
    bool allowed = !uses_var(g, [&](const Var* var) {
      if (defined_inside_.count(var) == 0) return false;
      for (const LoopInfo& info : inner_) {
        if (info.var.get() == var) return false;
      }
      return true;
    });
    if (!allowed) return std::nullopt;
    Expr step;
    const int64_t* k = constant_step(&ana_, g, loop_->loop_var, &step);
    if (k == nullptr || *k == 0) return std::nullopt;
    int64_t coefficient = *k;
    Expr h = ana_.simplify(
        sub(g, mul(make_const(g->dtype, coefficient), cast(g->dtype, Expr(loop_->loop_var)))));
    if (uses(h, v)) return std::nullopt;
    // The least and the greatest value of h: each inner loop variable, innermost first, at the
    // end of its range that makes h smallest (largest).
    Expr h_min = h, h_max = h;
    for (auto it = inner_.rbegin(); it != inner_.rend(); ++it) {
      const LoopInfo& info = *it;
      if (!uses(h_min, info.var.get()) && !uses(h_max, info.var.get())) continue;
      if (uses(info.range.min, v) || uses(info.range.extent, v)) return std::nullopt;
      Expr last = info.range.min + info.range.extent - 1;
      for (Expr* bound : {&h_min, &h_max}) {
        if (!uses(*bound, info.var.get())) continue;
        const int64_t* c = constant_step(&ana_, *bound, info.var, &step);
        if (c == nullptr) return std::nullopt;
        bool at_min = (*c >= 0) == (bound == &h_min);
        Expr end = at_min ? info.range.min : last;
        *bound = ana_.simplify(substitute(*bound, {{info.var.get(), cast(info.var->dtype, end)}}));
      }
    }
    auto inside = [&](const Var* var) { return defined_inside_.count(var) > 0; };
    if (uses_var(h_min, inside) || uses_var(h_max, inside)) return std::nullopt;
    return Candidate{atom, coefficient, h_min, h_max};
  }

  const For* loop_;
  const std::vector<Expr>& excluded_;
  arith::Analyzer& ana_;
  std::unordered_set<const Var*> defined_inside_;
  std::vector<LoopInfo> inner_;
  std::vector<Candidate> found_;
};

// Replaces a comparison by a truth value wherever it appears, folds what that decides, and drops
// the statements left without effect (a check decided false without an else branch, and the
// loops, sequences and allocations around nothing).
class AtomReplacer : public IRMutator {
 public:
  AtomReplacer(std::vector<Expr> atoms, bool value) : atoms_(std::move(atoms)), value_(value) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const LT* op) override { return replace(op); }
  Expr visit(const LE* op) override { return replace(op); }
  Expr visit(const GT* op) override { return replace(op); }
  Expr visit(const GE* op) override { return replace(op); }

  Expr visit(const And* op) override {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (is_const_int(a, 0) || is_const_int(b, 0)) return bool_const(false);
    if (is_const_int(a, 1)) return b;
    if (is_const_int(b, 1)) return a;
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    return make<And>(op->dtype, a, b);
  }

  Expr visit(const Or* op) override {
    Expr a = mutate(op->a);
    Expr b = mutate(op->b);
    if (is_const_int(a, 1) || is_const_int(b, 1)) return bool_const(true);
    if (is_const_int(a, 0)) return b;
    if (is_const_int(b, 0)) return a;
    if (a.same_as(op->a) && b.same_as(op->b)) return op;
    return make<Or>(op->dtype, a, b);
  }

  Expr visit(const Not* op) override {
    Expr a = mutate(op->a);
    if (const int64_t* c = as_const_int(a); c != nullptr && a->dtype.is_scalar()) {
      return bool_const(*c == 0);
    }
    if (a.same_as(op->a)) return op;
    return make<Not>(op->dtype, a);
  }

  Expr visit(const Select* op) override {
    Expr result = IRMutator::visit(op);
    const auto* select = result.as<Select>();
    if (select == nullptr || !select->condition->dtype.is_scalar()) return result;
    if (is_const_int(select->condition, 1)) return select->true_value;
    if (is_const_int(select->condition, 0)) return select->false_value;
    return result;
  }

  Expr visit(const Call* op) override {
    Expr result = IRMutator::visit(op);
    const auto* call = result.as<Call>();
    if (call == nullptr || result.same_as(Expr(op))) return result;
    if (call->op == Builtin::Likely && as_const_int(call->args[0]) != nullptr) {
      return call->args[0];
    }
    if (call->op == Builtin::IfThenElse && is_const_int(call->args[0], 1)) return call->args[1];
    if (call->op == Builtin::IfThenElse && is_const_int(call->args[0], 0)) return call->args[2];
    return result;
  }

  Stmt visit(const IfThenElse* op) override {
    Expr condition = mutate(op->condition);
    if (is_const_int(condition, 1)) return mutate(op->then_case);
    if (is_const_int(condition, 0)) {
      return op->else_case.defined() ? mutate(op->else_case) : no_op();
    }
    Stmt then_case = mutate(op->then_case);
    Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return op;
    }
    // A check whose branches became no-ops is one too (a vector loop would otherwise keep a
    // condition that varies across its lanes over nothing, and run serially).
    if (is_no_op(then_case) && (!else_case.defined() || is_no_op(else_case))) return no_op();
    return make<IfThenElse>(condition, then_case, else_case);
  }

  Stmt visit(const SeqStmt* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* sequence = visited.as<SeqStmt>();
    if (sequence == nullptr || visited.same_as(Stmt(op))) return visited;
    std::vector<Stmt> kept;
    for (const Stmt& s : sequence->seq) {
      if (!is_no_op(s)) kept.push_back(s);
    }
    return kept.size() == sequence->seq.size() ? visited : seq(std::move(kept));
  }

  Stmt visit(const For* op) override { return no_op_if_empty(IRMutator::visit(op), op); }
  Stmt visit(const Allocate* op) override { return no_op_if_empty(IRMutator::visit(op), op); }
  Stmt visit(const LetStmt* op) override { return no_op_if_empty(IRMutator::visit(op), op); }

 private:
  Expr replace(const ExprNode* op) {
    Expr e(op);
    for (const Expr& atom : atoms_) {
      if (op->kind() == atom->kind() && structural_equal(e, atom)) return bool_const(value_);
    }
    return e;
  }

  // `s`, the visited `original`, or a no-op when a body became one here.
  static Stmt no_op_if_empty(const Stmt& s, const StmtNode* original) {
    if (s.same_as(Stmt(original))) return s;
    Stmt body;
    if (const auto* loop = s.as<For>()) body = loop->body;
    if (const auto* alloc = s.as<Allocate>()) body = alloc->body;
    if (const auto* let = s.as<LetStmt>()) body = let->body;
    return body.defined() && is_no_op(body) ? no_op() : s;
  }

  std::vector<Expr> atoms_;
  bool value_;
};

class LoopPartitioner : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    bool splittable = op->kind != ForKind::kVectorized && op->kind != ForKind::kThreadBinding &&
                      op->kind != ForKind::kUnrolled && !is_const_int(op->extent, 0) &&
                      !is_const_int(op->extent, 1);
    if (splittable) {
      std::vector<Expr> excluded = excluded_;
      for (const auto& [var, atom] : checked_) {
        if (var == op->loop_var.get()) excluded.push_back(atom);
      }
      std::vector<Candidate> candidates = CandidateCollector(op, &ana_, excluded).collect();
      for (const Candidate& c : candidates) {
        if (Stmt s = partition(op, c, same_points(c, candidates)); s.defined()) return s;
      }
    }
    arith::ConstraintScope scope(&ana_, op->loop_var, Range{op->min, op->extent});
    if (is_thread_loop(*op)) thread_vars_.insert(op->loop_var.get());
    Stmt result = IRMutator::visit(op);
    thread_vars_.erase(op->loop_var.get());
    return result;
  }

 private:
  // The comparisons of `candidates` that split the loop where `c` does (the same step and the
  // same least and greatest h: the bound checks of a tile's init, update and write-back, over
  // inner loops of other names), `c`'s included: each is decided where `c` is.
  static std::vector<Expr> same_points(const Candidate& c,
                                       const std::vector<Candidate>& candidates) {
    std::vector<Expr> atoms;
    for (const Candidate& other : candidates) {
      if (other.k == c.k && structural_equal(other.h_min, c.h_min) &&
          structural_equal(other.h_max, c.h_max)) {
        atoms.push_back(other.atom);
      }
    }
    return atoms;
  }

  // The loop split on `c` (deciding each of `atoms`, c's among them, where it decides c's), or
  // null when neither a steady nor a decided-false part would remain.
  Stmt partition(const For* op, const Candidate& c, const std::vector<Expr>& atoms) {
    // ana_ knows the loops around op.
    // Step 1. The split points. With k < 0 the comparison holds for every inner iteration up
    // to floor(h_min / -k) and for none from floor(h_max / -k) + 1 on; with k > 0 it holds for
    // none below ceil(-h_max / k) and for every one from ceil(-h_min / k) on.
    DataType t = c.h_min->dtype;
    auto point = [&](const Expr& h) {
      return c.k < 0 ? floordiv(h, make_const(t, -c.k)) + 1
                     : floordiv(add(neg(h), make_const(t, c.k - 1)), make_const(t, c.k));
    };
    DataType vt = op->loop_var->dtype;
    Expr end = ana_.simplify(add(op->min, op->extent));
    auto clamp = [&](const Expr& p) { return ana_.simplify(min(max(cast(vt, p), op->min), end)); };
    Expr first_point = clamp(point(c.k < 0 ? c.h_min : c.h_max));
    Expr second_point = clamp(point(c.k < 0 ? c.h_max : c.h_min));
    Range first{op->min, ana_.simplify(sub(first_point, op->min))};
    Range middle{first_point, ana_.simplify(sub(second_point, first_point))};
    Range last{second_point, ana_.simplify(sub(end, second_point))};
    const Range& steady = c.k < 0 ? first : last;
    const Range& decided_false = c.k < 0 ? last : first;
    auto empty = [&](const Range& r) { return ana_.can_prove(le(r.extent, make_zero(vt))); };
    if (empty(steady) && empty(decided_false)) return Stmt();
    // On a GPU the threads of a block may synchronize inside the loop (a shared fetch, a loop of
    // its threads): each of them must run it as often as the others.
    if ((uses_any(first_point, thread_vars_) || uses_any(second_point, thread_vars_)) &&
        synchronizes(op->body)) {
      return Stmt();
    }

    // Step 2. The steady part without the comparison; it is searched again for other bounds.
    Stmt steady_part;
    if (!empty(steady)) {
      steady_part = mutate(part(op, steady, AtomReplacer(atoms, true).mutate(op->body)));
    }

    // Step 3. The part where the comparison fails everywhere: what the check leaves there, and
    // nothing when that has no effect.
    Stmt false_part;
    Stmt false_body = AtomReplacer(atoms, false).mutate(op->body);
    if (!empty(decided_false) && !is_no_op(false_body)) {
      false_part = renew_definitions(mutate(part(op, decided_false, false_body)));
    }

    // Step 4. The checked part, with fresh definitions. One iteration is a boundary: it is
    // peeled and not split on the comparison again. A longer part is not split on it again
    // either, but the loops inside it may be.
    Stmt checked_part;
    if (!empty(middle)) {
      bool peeled = is_const_int(middle.extent, 1);
      size_t excluded_before = excluded_.size(), checked_before = checked_.size();
      for (const Expr& atom : atoms) {
        if (peeled) {
          excluded_.push_back(atom);
        } else {
          checked_.emplace_back(op->loop_var.get(), atom);
        }
      }
      checked_part = mutate(part(op, middle, op->body));
      excluded_.resize(excluded_before);
      checked_.resize(checked_before);
      // A loop of extent 1 is never split, so it is still the loop of v here.
      const auto* single = checked_part.as<For>();
      if (peeled && single != nullptr && single->loop_var.same_as(op->loop_var)) {
        checked_part = substitute(single->body, {{op->loop_var.get(), middle.min}});
      }
      checked_part = renew_definitions(checked_part);
    }
    if (c.k < 0) return seq({steady_part, checked_part, false_part});
    return seq({false_part, checked_part, steady_part});
  }

  // The loop `op` over `range` with `body`.
  static Stmt part(const For* op, const Range& range, const Stmt& body) {
    auto loop = copy(op);
    loop->min = range.min;
    loop->extent = range.extent;
    loop->body = body;
    return loop;
  }

  // Whether the threads of a block may wait for each other in `body`: it holds a loop of them,
  // or reads or writes "shared" memory (insert_barriers puts its barriers there later).
  static bool synchronizes(const Stmt& body) {
    bool found = false;
    post_order_visit(body, [&found](const Node* node) {
      if (node->kind() == NodeKind::For) {
        found = found || is_thread_loop(*static_cast<const For*>(node));
      } else if (node->kind() == NodeKind::BufferStore) {
        found = found || is_shared_scope(static_cast<const BufferStore*>(node)->buffer->scope);
      } else if (node->kind() == NodeKind::BufferLoad) {
        found = found || is_shared_scope(static_cast<const BufferLoad*>(node)->buffer->scope);
      }
    });
    return found;
  }

  // The loops around the one visited, bound to their ranges (each while it is visited), for
  // the candidates and split points: binding a loop nest once, not again for each of its loops
  // (symbolic ranges of earlier splits are slow to simplify).
  arith::Analyzer ana_;
  std::unordered_set<const Var*> thread_vars_;  // of the enclosing threadIdx loops
  // Comparisons that peeled checked parts are not split on again, at any depth.
  std::vector<Expr> excluded_;
  // (loop variable, comparison): the checked parts being searched, which are not split on their
  // own comparison again.
  std::vector<std::pair<const Var*, Expr>> checked_;
};

}  // namespace

Ref<PrimFunc> loop_partition(const Ref<PrimFunc>& func) {
  return with_body(func, LoopPartitioner().mutate(func->body));
}

}  // namespace kiln::tir
