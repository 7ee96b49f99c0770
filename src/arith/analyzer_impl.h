// The private state of an Analyzer: what is known about variables, the conditions known to
// hold, and the undo log that ends scoped facts. Shared by the analyses in src/arith.
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/arith/analyzer.h"

namespace kiln::arith {

// What is known about one variable.
struct VarInfo {
  ir::Ref<ir::Var> var;  // keeps the key of the map alive
  ConstIntBound bound;
  ModularSet modular;
  ir::Expr value;   // the value it is bound to, or null
  ir::Range range;  // the range it was bound to, or {null, null}
  bool bound_by_user = false;
};

// A condition known to hold. `nonneg`, when defined, is a canonical expression known to be
// >= 0 that says the same (or part of it): `a < b` gives `b - a - 1`.
struct Fact {
  ir::Expr condition;
  ir::Expr nonneg;
};

struct Analyzer::Impl {
  std::unordered_map<const ir::Var*, VarInfo> vars;
  std::vector<Fact> facts;

  // Scoped changes are undone in reverse order when their frame is popped.
  struct Undo {
    const ir::Var* var;
    bool existed;
    VarInfo old;
  };
  std::vector<Undo> undo_log;
  struct Frame {
    size_t undo_size;
    size_t fact_count;
  };
  std::vector<Frame> frames;

  // Opens a scope for facts and bindings and returns its depth; pop_frame(depth) ends it,
  // together with any scope opened after it.
  size_t push_frame();
  void pop_frame(size_t depth);

  // The info of `v`, or null when nothing is known.
  const VarInfo* find(const ir::Var* v) const;
  // Sets the info of `v`; inside a frame the old info comes back when the frame is popped.
  void set_info(VarInfo info, bool scoped);
  // Binds v to a range / a value (see Analyzer::bind).
  void bind_range(const ir::Ref<ir::Var>& v, const ir::Range& range, bool scoped);
  void bind_value(const ir::Ref<ir::Var>& v, const ir::Expr& value, bool scoped);
  // Records that `condition` holds (split at And), tightening variable bounds it names.
  void add_condition(const ir::Expr& condition, bool scoped);

  // The analyses (const_int_bound.cc, modular_set.cc, rewrite_simplify.cc,
  // canonical_simplify.cc).
  ConstIntBound bound(const ir::Expr& e);
  ModularSet modular(const ir::Expr& e);
  ir::Expr rewrite(const ir::Expr& e);
  ir::Expr canonical(const ir::Expr& e);
  ir::Expr simplify(const ir::Expr& e, int max_rounds);

  // Proofs (prove.cc). `e` is a signed integer expression.
  bool prove_nonneg(const ir::Expr& e);
  // 1 when a known condition says `cond` holds, 0 when one says it does not, -1 otherwise.
  int known_truth(const ir::Expr& cond);

  // Guards the rewrite simplifier's re-simplification of the results of its rules.
  int rewrite_depth = 0;
};

// While alive, `condition` is a known fact of the analyzer (used to simplify the operands of
// And, Or, Select and if_then_else, and the branches of statements, under what is known there).
// With a null condition it only opens a scope for scoped bindings (loop variables, lets).
class FactScope {
 public:
  FactScope(Analyzer::Impl* impl, const ir::Expr& condition);
  ~FactScope() { impl_->pop_frame(depth_); }
  FactScope(const FactScope&) = delete;
  FactScope& operator=(const FactScope&) = delete;

 private:
  Analyzer::Impl* impl_;
  size_t depth_;
};

}  // namespace kiln::arith
