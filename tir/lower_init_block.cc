// lower_init_block: turns each block's init into a statement guarded by "every reduce iterator
// is at its minimum", placed before the block's body.
#include "kiln/tir/lower_init_block.h"

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

class InitLowerer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const Block* op) override {
    Stmt visited = IRMutator::visit(op);
    const auto* block = visited.as<Block>();
    if (!block->init.defined()) return visited;
    // The interpreter and the schedule run init at the first step of every reduction, which
    // is where each reduce iterator (and only those) sits at the min of its domain.
    Expr condition;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.type != IterType::kCommReduce) continue;
      Expr at_min = eq(iv.var, iv.dom.min);
      condition = condition.defined() ? logical_and(condition, at_min) : at_min;
    }
    Stmt init = block->init;
    if (condition.defined()) init = make<IfThenElse>(condition, init);
    auto result = copy(block);
    result->init = nullptr;
    result->body = seq({init, block->body});
    return result;
  }
};

}  // namespace

Ref<PrimFunc> lower_init_block(const Ref<PrimFunc>& func) {
  return with_body(func, InitLowerer().mutate(func->body));
}

}  // namespace kiln::tir
