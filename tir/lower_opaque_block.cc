// lower_opaque_block: turns each block into the statements it stands for once scheduling is
// over: its body with the iterators replaced by their bindings, under its predicate and inside
// the allocations of its buffers.
#include "kiln/tir/lower_opaque_block.h"

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

class BlockLowerer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const BlockRealize* op) override {
    const Block* block = op->block.get();
    user_check(!block->init.defined()) << "lower_opaque_block: block \"" << block->name
                                       << "\" still has an init; run lower_init_block first";
    internal_check(op->iter_values.size() == block->iter_vars.size())
        << "lower_opaque_block: block \"" << block->name << "\" has " << block->iter_vars.size()
        << " iterators but " << op->iter_values.size() << " values";
    // Inner blocks first, so that their bindings (which may use this block's iterators) are
    // substituted below like any other expression.
    Stmt body = mutate(block->body);
    VarMap bindings;
    for (size_t k = 0; k < block->iter_vars.size(); ++k) {
      bindings[block->iter_vars[k].var.get()] = mutate(op->iter_values[k]);
    }
    body = substitute(body, bindings);
    for (auto it = block->alloc_buffers.rbegin(); it != block->alloc_buffers.rend(); ++it) {
      body = make<Allocate>(*it, body);
    }
    Expr predicate = mutate(op->predicate);
    if (predicate.defined() && !is_const_int(predicate, 1)) {
      body = make<IfThenElse>(predicate, body);
    }
    return body;
  }

  Stmt visit(const Block* op) override {
    internal_error << "lower_opaque_block: block \"" << op->name
                   << "\" is not the block of a BlockRealize";
  }
};

}  // namespace

Ref<PrimFunc> lower_opaque_block(const Ref<PrimFunc>& func) {
  return with_body(func, BlockLowerer().mutate(func->body));
}

}  // namespace kiln::tir
