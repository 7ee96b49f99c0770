// Helpers shared by the schedule primitives (see schedule_util.h).
#include "schedule_util.h"

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"

namespace kiln::schedule {

using namespace kiln::ir;

namespace {

class StmtReplacer : public IRMutator {
 public:
  StmtReplacer(const StmtNode* target, Stmt replacement)
      : target_(target), replacement_(std::move(replacement)) {}
  using IRMutator::mutate;
  bool found = false;

 protected:
  using IRMutator::visit;
  Stmt visit(const For* op) override { return here(op) ? replacement_ : IRMutator::visit(op); }
  Stmt visit(const BlockRealize* op) override {
    return here(op) ? replacement_ : IRMutator::visit(op);
  }
  Stmt visit(const Block* op) override { return here(op) ? replacement_ : IRMutator::visit(op); }
  Stmt visit(const SeqStmt* op) override {
    if (here(op)) return replacement_;
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : op->seq) {
      Stmt m = mutate(s);
      changed |= !m.same_as(s);
      if (m.defined()) stmts.push_back(m);
    }
    if (!changed) return op;
    return seq(std::move(stmts));
  }
  Stmt visit(const IfThenElse* op) override {
    return here(op) ? replacement_ : IRMutator::visit(op);
  }
  Stmt visit(const BufferStore* op) override {
    return here(op) ? replacement_ : IRMutator::visit(op);
  }
  Stmt visit(const LetStmt* op) override { return here(op) ? replacement_ : IRMutator::visit(op); }
  Stmt visit(const Allocate* op) override { return here(op) ? replacement_ : IRMutator::visit(op); }
  Stmt visit(const Evaluate* op) override { return here(op) ? replacement_ : IRMutator::visit(op); }

 private:
  bool here(const StmtNode* op) {
    if (op != target_) return false;
    found = true;
    return true;
  }
  const StmtNode* target_;
  Stmt replacement_;
};

class ChildRealizeCollector : public IRVisitor {
 public:
  std::vector<const BlockRealize*> realizes;

 protected:
  using IRVisitor::visit;
  void visit(const BlockRealize* op) override { realizes.push_back(op); }
};

class BlockCollector : public IRVisitor {
 public:
  std::vector<const Block*> blocks;

 protected:
  using IRVisitor::visit;
  void visit(const Block* op) override {
    blocks.push_back(op);
    IRVisitor::visit(op);
  }
};

class PredicateAdder : public IRMutator {
 public:
  explicit PredicateAdder(Expr condition) : condition_(std::move(condition)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const BlockRealize* op) override {
    Expr predicate =
        is_const_int(op->predicate, 1) ? condition_ : logical_and(op->predicate, condition_);
    return make<BlockRealize>(op->iter_values, predicate, op->block);
  }

 private:
  Expr condition_;
};

}  // namespace

Stmt replace_stmt(const Stmt& root, const StmtNode* target, const Stmt& replacement) {
  if (root.get() == target) return replacement;
  StmtReplacer replacer(target, replacement);
  Stmt out = replacer.mutate(root);
  internal_check(replacer.found) << "schedule: the statement to replace is not in the function";
  return out;
}

Ref<PrimFunc> with_body(const Ref<PrimFunc>& func, Stmt body) {
  auto f = copy(func.get());
  f->body = std::move(body);
  return f;
}

std::vector<const BlockRealize*> child_block_realizes(const Stmt& stmt) {
  ChildRealizeCollector collector;
  collector.visit_stmt(stmt);
  return collector.realizes;
}

std::vector<const Block*> blocks_under(const Stmt& stmt) {
  BlockCollector collector;
  collector.visit_stmt(stmt);
  return collector.blocks;
}

Stmt add_predicate(const Stmt& stmt, const Expr& condition) {
  return PredicateAdder(condition).mutate(stmt);
}

std::string fresh_block_name(const FunctionIndex& index, const std::string& base) {
  if (index.find_block(base) == nullptr) return base;
  for (int i = 1;; ++i) {
    std::string name = base + "_" + std::to_string(i);
    if (index.find_block(name) == nullptr) return name;
  }
}

VarMap block_bindings(const BlockLocation& block) {
  VarMap bindings;
  for (size_t k = 0; k < block.block->iter_vars.size(); ++k) {
    bindings[block.block->iter_vars[k].var.get()] = block.realize->iter_values[k];
  }
  return bindings;
}

void bind_enclosing_ranges(const FunctionIndex& index, const StmtNode* stmt,
                           arith::Analyzer* analyzer) {
  for (const StmtNode* s = index.parent(stmt); s != nullptr; s = index.parent(s)) {
    if (s->kind() == NodeKind::For) {
      const auto* loop = static_cast<const For*>(s);
      analyzer->bind(loop->loop_var, Range{loop->min, loop->extent}, true);
    } else if (s->kind() == NodeKind::Block) {
      for (const IterVar& iv : static_cast<const Block*>(s)->iter_vars) {
        analyzer->bind(iv.var, iv.dom, true);
      }
    }
  }
}

}  // namespace kiln::schedule
