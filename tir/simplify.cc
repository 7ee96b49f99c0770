// simplify: runs arith::Analyzer's statement simplifier over a function's body, then removes the
// statements left without effect.
#include "kiln/tir/simplify.h"

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

// `T.evaluate(constant)`: what the simplifier leaves of an IfThenElse decided false.
bool is_no_op(const Stmt& s) {
  const auto* e = s.as<Evaluate>();
  return e != nullptr && (e->value.is<IntImm>() || e->value.is<FloatImm>());
}

// Drops statements without effect: no-ops in a sequence, and loops, conditions, allocations
// and lets whose body is a no-op (each becomes a no-op itself).
class NoOpRemover : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const SeqStmt* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* sequence = visited.as<SeqStmt>();
    if (sequence == nullptr) return visited;
    std::vector<Stmt> kept;
    for (const Stmt& s : sequence->seq) {
      if (!is_no_op(s)) kept.push_back(s);
    }
    if (kept.size() == sequence->seq.size()) return visited;
    if (kept.empty()) return no_op();
    return seq(std::move(kept));
  }

  Stmt visit(const For* op) override { return no_op_if_body_is(IRMutator::visit(op)); }
  Stmt visit(const Allocate* op) override { return no_op_if_body_is(IRMutator::visit(op)); }
  Stmt visit(const LetStmt* op) override { return no_op_if_body_is(IRMutator::visit(op)); }

  Stmt visit(const IfThenElse* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* branch = visited.as<IfThenElse>();
    if (branch == nullptr || !is_no_op(branch->then_case)) return visited;
    if (!branch->else_case.defined() || is_no_op(branch->else_case)) return no_op();
    return visited;
  }

 private:
  static Stmt no_op() { return make<Evaluate>(int32_const(0)); }

  static Stmt no_op_if_body_is(const Stmt& s) {
    Stmt body;
    if (const auto* loop = s.as<For>()) body = loop->body;
    if (const auto* alloc = s.as<Allocate>()) body = alloc->body;
    if (const auto* let = s.as<LetStmt>()) body = let->body;
    return body.defined() && is_no_op(body) ? no_op() : s;
  }
};

}  // namespace

Ref<PrimFunc> simplify(const Ref<PrimFunc>& func) {
  arith::Analyzer analyzer;
  Stmt body = analyzer.simplify(func->body);
  return with_body(func, NoOpRemover().mutate(body));
}

}  // namespace kiln::tir
