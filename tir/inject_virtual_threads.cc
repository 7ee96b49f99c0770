// inject_virtual_threads: the iterations of a vthread loop run inside their thread, around the
// statements that depend on them, and once for what they share (see the header for the
// contract).
#include "kiln/tir/inject_virtual_threads.h"

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

namespace {

using VarSet = std::unordered_set<const Var*>;

// Step 1. What depends on the virtual thread: its variable, the let variables and loop
// variables computed from variant values, and the buffers allocated under the loop that variant
// statements store into. `stores` are the stores that depend on it, found as the fixed point
// of these rules is reached.
class VariantAnalysis : public IRVisitor {
 public:
  VariantAnalysis(const Var* thread, const Stmt& body) {
    variant.insert(thread);
    for (size_t before = 0; before != variant.size() + stores.size();) {
      before = variant.size() + stores.size();
      visit_stmt(body);
    }
  }

  VarSet variant;
  std::unordered_set<const BufferStore*> stores;
  // The data of each buffer allocated under the loop, and those used other than by loads and
  // stores (a call argument): such a buffer cannot get copies.
  std::unordered_map<const Var*, const Buffer*> allocated;
  VarSet opaque;

 protected:
  using IRVisitor::visit;

  void visit(const LetStmt* op) override {
    if (depends(op->value) || in_variant_control()) variant.insert(op->var.get());
    IRVisitor::visit(op);
  }

  void visit(const For* op) override {
    bool variant_bounds = depends(op->min) || depends(op->extent);
    if (variant_bounds || in_variant_control()) variant.insert(op->loop_var.get());
    control_.push_back(variant_bounds);
    visit_stmt(op->body);
    control_.pop_back();
  }

  void visit(const IfThenElse* op) override {
    control_.push_back(depends(op->condition));
    visit_stmt(op->then_case);
    if (op->else_case.defined()) visit_stmt(op->else_case);
    control_.pop_back();
  }

  void visit(const Allocate* op) override {
    allocated[op->buffer->data.get()] = op->buffer.get();
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    bool depends_on_thread = in_variant_control() || depends(op->value);
    for (const Expr& index : op->indices) depends_on_thread = depends_on_thread || depends(index);
    const Var* data = op->buffer->data.get();
    if (depends_on_thread && allocated.count(data) != 0) variant.insert(data);
    if (depends_on_thread || variant.count(data) != 0) stores.insert(op);
    IRVisitor::visit(op);
  }

  void visit(const BufferLoad* op) override {
    for (const Expr& index : op->indices) visit_expr(index);
  }

  void visit(const Var* op) override {
    if (allocated.count(op) != 0) opaque.insert(op);
  }

 private:
  bool depends(const Expr& e) const { return uses_any(e, variant); }
  bool in_variant_control() const {
    for (bool c : control_) {
      if (c) return true;
    }
    return false;
  }

  std::vector<bool> control_;  // per enclosing loop or if: whether its bounds or condition vary
};

// Step 3's rewrite of a wrapped statement: the virtual thread's variable replaced by the loop's,
// and each access of a buffer with copies moved to the copy of that virtual thread.
class CopySelector : public IRMutator {
 public:
  CopySelector(const Var* thread, const Ref<Var>& loop_var,
               const std::unordered_map<const Var*, Ref<Buffer>>& copies)
      : thread_(thread), loop_var_(loop_var), copies_(copies) {}

 protected:
  using IRMutator::visit;

  Expr visit(const Var* op) override { return op == thread_ ? Expr(loop_var_) : Expr(op); }

  Expr visit(const BufferLoad* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<BufferLoad>();
    auto it = copies_.find(load->buffer->data.get());
    if (it == copies_.end()) return e;
    return make<BufferLoad>(load->dtype, it->second, select_copy(*load->buffer, load->indices));
  }

  Stmt visit(const BufferStore* op) override {
    Stmt s = IRMutator::visit(op);
    const auto* store = s.as<BufferStore>();
    auto it = copies_.find(store->buffer->data.get());
    if (it == copies_.end()) return s;
    return make<BufferStore>(it->second, store->value, select_copy(*store->buffer, store->indices));
  }

 private:
  // A flattened buffer's index moves by the virtual thread times its elements; an unflattened
  // one gets the virtual thread as its first index.
  std::vector<Expr> select_copy(const Buffer& buffer, std::vector<Expr> indices) {
    Expr thread = cast(indices.back()->dtype, loop_var_);
    if (buffer.ndim() != 1) {
      indices.insert(indices.begin(), thread);
      return indices;
    }
    indices.back() =
        analyzer_.simplify(add(mul(thread, cast(thread->dtype, buffer.shape[0])), indices.back()));
    return indices;
  }

  arith::Analyzer analyzer_;

  const Var* thread_;
  Ref<Var> loop_var_;
  const std::unordered_map<const Var*, Ref<Buffer>>& copies_;
};

// Steps 2 and 3 for one vthread loop.
class VirtualThreadInjector {
 public:
  VirtualThreadInjector(const For& loop, int64_t extent)
      : loop_(loop), extent_(extent), analysis_(loop.loop_var.get(), loop.body) {}

  Stmt run() { return inject(loop_.body); }

 private:
  // Whether `s` depends on the virtual thread.
  bool is_variant(const Stmt& s) const {
    if (uses_any_stmt(s, analysis_.variant)) return true;
    bool found = false;
    post_order_visit(s, [&](const Node* node) {
      found = found || (node->kind() == NodeKind::BufferStore &&
                        analysis_.stores.count(static_cast<const BufferStore*>(node)) != 0);
    });
    return found;
  }

  // Whether `s` holds a store that does not depend on the virtual thread (one that runs once).
  bool has_shared_store(const Stmt& s) const {
    bool found = false;
    post_order_visit(s, [&](const Node* node) {
      if (node->kind() == NodeKind::BufferStore) {
        found = found || analysis_.stores.count(static_cast<const BufferStore*>(node)) == 0;
      } else if (node->kind() == NodeKind::Evaluate) {
        found = found || !uses_any(static_cast<const Evaluate*>(node)->value, analysis_.variant);
      }
    });
    return found;
  }

  static bool uses_any_stmt(const Stmt& s, const VarSet& vars) {
    return uses_var(s, [&vars](const Var* v) { return vars.count(v) != 0; });
  }

  bool depends(const Expr& e) const { return uses_any(e, analysis_.variant); }

  Stmt inject(const Stmt& s) {
    if (!is_variant(s)) return s;
    if (!has_shared_store(s)) return wrap(s);
    switch (s->kind()) {
      case NodeKind::SeqStmt: {
        std::vector<Stmt> seq;
        for (const Stmt& part : s.as<SeqStmt>()->seq) seq.push_back(inject(part));
        return make<SeqStmt>(std::move(seq));
      }
      case NodeKind::For: {
        const auto* op = s.as<For>();
        bool enterable = op->kind == ForKind::kSerial || op->kind == ForKind::kUnrolled ||
                         op->kind == ForKind::kThreadBinding;
        if (!enterable || depends(op->min) || depends(op->extent)) return wrap(s);
        auto loop = copy(op);
        loop->body = inject(op->body);
        return loop;
      }
      case NodeKind::IfThenElse: {
        const auto* op = s.as<IfThenElse>();
        if (depends(op->condition)) return wrap(s);
        Stmt else_case = op->else_case.defined() ? inject(op->else_case) : Stmt();
        return make<IfThenElse>(op->condition, inject(op->then_case), else_case);
      }
      case NodeKind::LetStmt: {
        const auto* op = s.as<LetStmt>();
        if (depends(op->value)) return wrap(s);
        return make<LetStmt>(op->var, op->value, inject(op->body));
      }
      case NodeKind::Allocate:
        return inject_allocation(s.as<Allocate>(), s);
      default:
        return wrap(s);
    }
  }

  // An allocation whose body holds a store that runs once: a variant buffer gets one copy per
  // virtual thread (Step 3), unless its data is used directly, which leaves the allocation
  // wrapped whole.
  Stmt inject_allocation(const Allocate* op, const Stmt& s) {
    const Buffer& buffer = *op->buffer;
    const Var* data = buffer.data.get();
    if (analysis_.variant.count(data) == 0) return make<Allocate>(op->buffer, inject(op->body));
    if (analysis_.opaque.count(data) != 0 || !buffer.strides.empty()) return wrap(s);
    auto copies = copy(op->buffer.get());
    Expr count = make_const(buffer.shape[0]->dtype, extent_);
    if (buffer.ndim() == 1) {
      copies->shape = {mul(count, buffer.shape[0])};
    } else {
      copies->shape.insert(copies->shape.begin(), count);
    }
    copies_[data] = copies;
    return make<Allocate>(copies, inject(op->body));
  }

  // `for v' in T.unroll(V): s`, with v' for the virtual thread.
  Stmt wrap(const Stmt& s) {
    Ref<Var> var = make_var(loop_.loop_var->name, loop_.loop_var->dtype);
    Stmt body = CopySelector(loop_.loop_var.get(), var, copies_).mutate(s);
    return make<For>(var, make_const(var->dtype, int64_t{0}), make_const(var->dtype, extent_),
                     ForKind::kUnrolled, body);
  }

  const For& loop_;
  int64_t extent_;
  VariantAnalysis analysis_;
  std::unordered_map<const Var*, Ref<Buffer>> copies_;  // data -> the buffer with V copies
};

class VirtualThreadLowering : public IRMutator {
 protected:
  using IRMutator::visit;

  Stmt visit(const For* op) override {
    if (!is_vthread_loop(*op)) return IRMutator::visit(op);
    // Inner vthread loops first: the outer one then sees their copies as its own buffers.
    Stmt visited = IRMutator::visit(op);
    const auto* loop = visited.as<For>();
    const int64_t* extent = as_const_int(loop->extent);
    user_check(extent != nullptr && is_const_int(loop->min, 0))
        << "inject_virtual_threads: loop " << loop->loop_var->name << " is bound to "
        << loop->thread_tag << " with the minimum " << to_script(loop->min) << " and the extent "
        << to_script(loop->extent) << "; virtual threads need a constant extent from 0";
    return VirtualThreadInjector(*loop, *extent).run();
  }
};

}  // namespace

Ref<PrimFunc> inject_virtual_threads(const Ref<PrimFunc>& func) {
  return with_body(func, VirtualThreadLowering().mutate(func->body));
}

}  // namespace kiln::tir
