// The statement simplifier: simplifies every expression of a statement with what is known at
// that point (loop ranges, branch conditions, let values, asserted conditions) and drops the
// branch of an IfThenElse whose condition is decided. Returns the same node when nothing
// changed.
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "src/arith/analyzer_impl.h"

namespace kiln::arith {

using namespace ir;

namespace {

class StmtSimplifier : public IRMutator {
 public:
  explicit StmtSimplifier(Analyzer::Impl* impl) : impl_(impl) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  // An expression reached from a statement is simplified as a whole.
#define KILN_SIMPLIFY_EXPR(Name)         \
  Expr visit(const Name* op) override {  \
    return impl_->simplify(Expr(op), 4); \
  }
  KILN_EXPR_NODE_LIST(KILN_SIMPLIFY_EXPR)
#undef KILN_SIMPLIFY_EXPR

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min);
    Expr extent = mutate(op->extent);
    Stmt body;
    {
      FactScope frame(impl_, Expr());
      impl_->bind_range(op->loop_var, Range{min, extent}, true);
      body = mutate(op->body);
    }
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
    auto n = copy(op);
    n->min = min;
    n->extent = extent;
    n->body = body;
    return n;
  }

  Stmt visit(const IfThenElse* op) override {
    Expr condition = mutate(op->condition);
    if (const int64_t* c = as_const_int(condition)) {
      if (*c != 0) return mutate(op->then_case);
      if (op->else_case.defined()) return mutate(op->else_case);
      return make<Evaluate>(int32_const(0));
    }
    Stmt then_case, else_case;
    {
      FactScope scope(impl_, condition);
      then_case = mutate(op->then_case);
    }
    if (op->else_case.defined()) {
      FactScope scope(impl_, impl_->simplify(logical_not(condition), 4));
      else_case = mutate(op->else_case);
    }
    if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return op;
    }
    return make<IfThenElse>(condition, then_case, else_case);
  }

  Stmt visit(const LetStmt* op) override {
    Expr value = mutate(op->value);
    Stmt body;
    {
      FactScope frame(impl_, Expr());
      VarInfo info;
      info.var = op->var;
      // A constant or a variable is substituted into the body; anything else only lends its
      // bounds.
      if (value.is<IntImm>() || value.is<FloatImm>() || value.is<Var>()) info.value = value;
      info.bound = impl_->bound(value);
      info.modular = impl_->modular(value);
      impl_->set_info(std::move(info), true);
      body = mutate(op->body);
    }
    const Var* var = op->var.get();
    if (!uses_var(body, [var](const Var* v) { return v == var; })) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return op;
    return make<LetStmt>(op->var, value, body);
  }

  Stmt visit(const AssertStmt* op) override {
    Expr condition = mutate(op->condition);
    Stmt body;
    {
      FactScope scope(impl_, condition);
      body = mutate(op->body);
    }
    if (condition.same_as(op->condition) && body.same_as(op->body)) return op;
    return make<AssertStmt>(condition, op->message, body);
  }

  Stmt visit(const Block* op) override {
    FactScope frame(impl_, Expr());
    for (const IterVar& iv : op->iter_vars) {
      if (iv.dom.min.defined() && iv.dom.extent.defined()) {
        impl_->bind_range(iv.var, iv.dom, true);
      }
    }
    return IRMutator::visit(op);
  }

  Stmt visit(const BlockRealize* op) override {
    std::vector<Expr> values = op->iter_values;
    bool changed = mutate_all(&values);
    Expr predicate = mutate(op->predicate);
    Stmt block;
    if (predicate.defined() && !predicate.is<IntImm>()) {
      FactScope scope(impl_, predicate);
      block = mutate(Stmt(op->block));
    } else {
      block = mutate(Stmt(op->block));
    }
    if (!changed && predicate.same_as(op->predicate) && block.same_as(op->block)) return op;
    Ref<Block> b = cast<Block>(block);
    internal_check(b.defined()) << "simplify: the block of a BlockRealize became a "
                                << kind_name(block->kind());
    return make<BlockRealize>(std::move(values), predicate, b);
  }

 private:
  Analyzer::Impl* impl_;
};

}  // namespace

Stmt Analyzer::simplify(const Stmt& s) {
  return StmtSimplifier(impl_.get()).mutate(s);
}

}  // namespace kiln::arith
