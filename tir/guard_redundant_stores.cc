// guard_redundant_stores: one thread per axis makes the stores of a GPU kernel that do not
// depend on that axis's thread index (see the header for the contract).
#include "kiln/tir/guard_redundant_stores.h"

#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Var*>;

bool is_thread_loop(const Node* node) {
  return node->kind() == NodeKind::For && tir::is_thread_loop(*static_cast<const For*>(node));
}

// What a statement holds that decides whether it can be guarded.
struct Contents {
  bool barrier = false;
  bool thread_loop = false;
  bool stores = false;  // to "shared" or "global" memory
};

Contents contents_of(const Stmt& s) {
  Contents c;
  post_order_visit(s, [&](const Node* node) {
    if (is_thread_loop(node)) c.thread_loop = true;
    if (node->kind() == NodeKind::Call &&
        static_cast<const Call*>(node)->op == Builtin::StorageSync) {
      c.barrier = true;
    }
    if (node->kind() == NodeKind::BufferStore &&
        static_cast<const BufferStore*>(node)->buffer->scope != "local") {
      c.stores = true;
    }
  });
  return c;
}

// Guards the statements of one kernel.
class KernelGuard : public IRMutator {
 public:
  explicit KernelGuard(std::set<std::string> tags) : tags_(std::move(tags)) {}

 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    if (!is_thread_loop(op)) return guard_or_descend(op);
    auto previous = enclosing_.find(op->thread_tag);
    const Var* outer = previous == enclosing_.end() ? nullptr : previous->second;
    enclosing_[op->thread_tag] = op->loop_var.get();
    thread_vars_.insert(op->loop_var.get());
    Stmt result = IRMutator::visit(op);
    if (outer != nullptr) {
      enclosing_[op->thread_tag] = outer;
    } else {
      enclosing_.erase(op->thread_tag);
    }
    return result;
  }
  Stmt visit(const LetStmt* op) override {
    depends_[op->var.get()] = thread_vars_of(op->value);
    return guard_or_descend(op);
  }
  Stmt visit(const BufferStore* op) override { return guard_or_descend(op); }
  Stmt visit(const IfThenElse* op) override { return guard_or_descend(op); }
  Stmt visit(const Allocate* op) override { return guard_or_descend(op); }
  Stmt visit(const Evaluate* op) override { return guard_or_descend(op); }
  Stmt visit(const SeqStmt* op) override { return IRMutator::visit(op); }

 private:
  // The enclosing thread variables an expression depends on (through lets too).
  VarSet thread_vars_of(const Expr& e) const {
    VarSet out;
    post_order_visit(e, [&](const Node* node) {
      if (node->kind() != NodeKind::Var) return;
      const auto* v = static_cast<const Var*>(node);
      if (thread_vars_.count(v) != 0) out.insert(v);
      auto it = depends_.find(v);
      if (it != depends_.end()) out.insert(it->second.begin(), it->second.end());
    });
    return out;
  }

  // The axes the stores of `s` do not depend on, whose threads all make them.
  std::vector<std::string> redundant_axes(const Stmt& s) {
    VarSet used;
    std::unordered_map<const Var*, VarSet> saved = depends_;
    post_order_visit(s, [&](const Node* node) {
      if (node->kind() == NodeKind::LetStmt) {
        const auto* let = static_cast<const LetStmt*>(node);
        depends_[let->var.get()] = thread_vars_of(let->value);
      }
    });
    post_order_visit(s, [&](const Node* node) {
      if (node->kind() != NodeKind::BufferStore) return;
      const auto* store = static_cast<const BufferStore*>(node);
      if (store->buffer->scope == "local") return;
      for (const Expr& index : store->indices) {
        VarSet vars = thread_vars_of(index);
        used.insert(vars.begin(), vars.end());
      }
    });
    depends_ = std::move(saved);
    std::vector<std::string> axes;
    for (const std::string& tag : tags_) {
      auto it = enclosing_.find(tag);
      if (it == enclosing_.end() || used.count(it->second) == 0) axes.push_back(tag);
    }
    return axes;
  }

  Stmt guard_or_descend(const StmtNode* op) {
    Stmt s(op);
    Contents c = contents_of(s);
    if (!c.stores) return s;
    if (c.barrier || c.thread_loop) return descend(op);
    std::vector<std::string> axes = redundant_axes(s);
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      auto guard = make<For>(make_var("single_" + it->substr(it->size() - 1)), int32_const(0),
                             int32_const(1), ForKind::kThreadBinding, s);
      guard->thread_tag = *it;
      guard->annotations["kiln.single_thread"] = bool_const(true);
      s = guard;
    }
    return s;
  }

  Stmt descend(const StmtNode* op) {
    switch (op->kind()) {
      case NodeKind::For:
        return IRMutator::visit(static_cast<const For*>(op));
      case NodeKind::LetStmt:
        return IRMutator::visit(static_cast<const LetStmt*>(op));
      case NodeKind::IfThenElse:
        return IRMutator::visit(static_cast<const IfThenElse*>(op));
      case NodeKind::Allocate:
        return IRMutator::visit(static_cast<const Allocate*>(op));
      default:
        return op;
    }
  }

  std::set<std::string> tags_;                             // the threadIdx axes of the kernel
  std::unordered_map<std::string, const Var*> enclosing_;  // tag -> enclosing loop variable
  std::unordered_map<const Var*, VarSet> depends_;         // let variable -> thread variables
  VarSet thread_vars_;                                     // every thread loop variable seen
};

// Finds the kernels: the outermost loops bound to GPU blocks or threads.
class KernelFinder : public IRMutator {
 protected:
  using IRMutator::visit;
  Stmt visit(const For* op) override {
    if (op->kind != ForKind::kThreadBinding) return IRMutator::visit(op);
    std::set<std::string> tags;
    post_order_visit(Stmt(op), [&](const Node* node) {
      if (is_thread_loop(node)) tags.insert(static_cast<const For*>(node)->thread_tag);
    });
    if (tags.empty()) return op;
    return KernelGuard(std::move(tags)).mutate(Stmt(op));
  }
};

}  // namespace

Ref<PrimFunc> guard_redundant_stores(const Ref<PrimFunc>& func) {
  return with_body(func, KernelFinder().mutate(func->body));
}

}  // namespace kiln::tir
