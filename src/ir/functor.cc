// Default traversals of IRVisitor and IRMutator, and the small utilities built on them.
#include "kiln/ir/functor.h"

namespace kiln::ir {

// ---------------------------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit_expr(const Expr& e) {
  if (!e.defined()) return;
  switch (e->kind()) {
#define KILN_DISPATCH(Name) \
  case NodeKind::Name:      \
    return visit(static_cast<const Name*>(e.get()));
    KILN_EXPR_NODE_LIST(KILN_DISPATCH)
#undef KILN_DISPATCH
    default:
      internal_error << "IRVisitor: " << kind_name(e->kind()) << " is not an expression";
  }
}

void IRVisitor::visit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind()) {
#define KILN_DISPATCH(Name) \
  case NodeKind::Name:      \
    return visit(static_cast<const Name*>(s.get()));
    KILN_STMT_NODE_LIST(KILN_DISPATCH)
#undef KILN_DISPATCH
    default:
      internal_error << "IRVisitor: " << kind_name(s->kind()) << " is not a statement";
  }
}

void IRVisitor::visit_buffer(const Buffer* buffer) {
  for (const Expr& e : buffer->shape) visit_expr(e);
  for (const Expr& e : buffer->strides) visit_expr(e);
  visit_expr(buffer->elem_offset);
}

void IRVisitor::visit_range(const Range& range) {
  visit_expr(range.min);
  visit_expr(range.extent);
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const StringImm*) {}
void IRVisitor::visit(const Var*) {}

#define KILN_VISIT_BINARY(Name)           \
  void IRVisitor::visit(const Name* op) { \
    visit_expr(op->a);                    \
    visit_expr(op->b);                    \
  }
KILN_VISIT_BINARY(Add)
KILN_VISIT_BINARY(Sub)
KILN_VISIT_BINARY(Mul)
KILN_VISIT_BINARY(Div)
KILN_VISIT_BINARY(Mod)
KILN_VISIT_BINARY(FloorDiv)
KILN_VISIT_BINARY(FloorMod)
KILN_VISIT_BINARY(Min)
KILN_VISIT_BINARY(Max)
KILN_VISIT_BINARY(EQ)
KILN_VISIT_BINARY(NE)
KILN_VISIT_BINARY(LT)
KILN_VISIT_BINARY(LE)
KILN_VISIT_BINARY(GT)
KILN_VISIT_BINARY(GE)
KILN_VISIT_BINARY(And)
KILN_VISIT_BINARY(Or)
#undef KILN_VISIT_BINARY

void IRVisitor::visit(const Not* op) {
  visit_expr(op->a);
}

void IRVisitor::visit(const Select* op) {
  visit_expr(op->condition);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}

void IRVisitor::visit(const Cast* op) {
  visit_expr(op->value);
}

void IRVisitor::visit(const Call* op) {
  for (const Expr& a : op->args) visit_expr(a);
}

void IRVisitor::visit(const Ramp* op) {
  visit_expr(op->base);
  visit_expr(op->stride);
}

void IRVisitor::visit(const Broadcast* op) {
  visit_expr(op->value);
}

void IRVisitor::visit(const Let* op) {
  visit_expr(op->value);
  visit_expr(op->body);
}

void IRVisitor::visit(const BufferLoad* op) {
  for (const Expr& i : op->indices) visit_expr(i);
}

void IRVisitor::visit(const Reduce* op) {
  for (const IterVar& iv : op->axis) visit_range(iv.dom);
  for (const Expr& e : op->source) visit_expr(e);
  for (const Expr& e : op->init) visit_expr(e);
  visit_expr(op->condition);
}

void IRVisitor::visit(const LetStmt* op) {
  visit_expr(op->value);
  visit_stmt(op->body);
}

void IRVisitor::visit(const AssertStmt* op) {
  visit_expr(op->condition);
  visit_stmt(op->body);
}

void IRVisitor::visit(const BufferStore* op) {
  visit_expr(op->value);
  for (const Expr& i : op->indices) visit_expr(i);
}

void IRVisitor::visit(const Allocate* op) {
  visit_buffer(op->buffer.get());
  visit_stmt(op->body);
}

void IRVisitor::visit(const For* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}

void IRVisitor::visit(const SeqStmt* op) {
  for (const Stmt& s : op->seq) visit_stmt(s);
}

void IRVisitor::visit(const IfThenElse* op) {
  visit_expr(op->condition);
  visit_stmt(op->then_case);
  visit_stmt(op->else_case);
}

void IRVisitor::visit(const Evaluate* op) {
  visit_expr(op->value);
}

void IRVisitor::visit(const Block* op) {
  for (const IterVar& iv : op->iter_vars) visit_range(iv.dom);
  for (const auto* regions : {&op->reads, &op->writes}) {
    for (const BufferRegion& r : *regions) {
      for (const Range& range : r.region) visit_range(range);
    }
  }
  for (const Ref<Buffer>& b : op->alloc_buffers) visit_buffer(b.get());
  visit_stmt(op->init);
  visit_stmt(op->body);
}

void IRVisitor::visit(const BlockRealize* op) {
  for (const Expr& v : op->iter_values) visit_expr(v);
  visit_expr(op->predicate);
  visit_stmt(op->block);
}

// ---------------------------------------------------------------------------------------------
// IRMutator

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e->kind()) {
#define KILN_DISPATCH(Name) \
  case NodeKind::Name:      \
    return visit(static_cast<const Name*>(e.get()));
    KILN_EXPR_NODE_LIST(KILN_DISPATCH)
#undef KILN_DISPATCH
    default:
      internal_error << "IRMutator: " << kind_name(e->kind()) << " is not an expression";
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s->kind()) {
#define KILN_DISPATCH(Name) \
  case NodeKind::Name:      \
    return visit(static_cast<const Name*>(s.get()));
    KILN_STMT_NODE_LIST(KILN_DISPATCH)
#undef KILN_DISPATCH
    default:
      internal_error << "IRMutator: " << kind_name(s->kind()) << " is not a statement";
  }
}

bool IRMutator::mutate_all(std::vector<Expr>* exprs) {
  bool changed = false;
  for (Expr& e : *exprs) {
    Expr m = mutate(e);
    if (!m.same_as(e)) {
      e = m;
      changed = true;
    }
  }
  return changed;
}

Range IRMutator::mutate(const Range& range) {
  return Range{mutate(range.min), mutate(range.extent)};
}

namespace {
bool same_range(const Range& a, const Range& b) {
  return a.min.same_as(b.min) && a.extent.same_as(b.extent);
}
}  // namespace

Expr IRMutator::visit(const IntImm* op) {
  return op;
}
Expr IRMutator::visit(const FloatImm* op) {
  return op;
}
Expr IRMutator::visit(const StringImm* op) {
  return op;
}
Expr IRMutator::visit(const Var* op) {
  return op;
}

// Binary nodes keep their dtype: a mutator that changes operand types must rebuild with op.h.
#define KILN_MUTATE_BINARY(Name)                              \
  Expr IRMutator::visit(const Name* op) {                     \
    Expr a = mutate(op->a);                                   \
    Expr b = mutate(op->b);                                   \
    if (a.same_as(op->a) && b.same_as(op->b)) return op;      \
    return make<Name>(op->dtype, std::move(a), std::move(b)); \
  }
KILN_MUTATE_BINARY(Add)
KILN_MUTATE_BINARY(Sub)
KILN_MUTATE_BINARY(Mul)
KILN_MUTATE_BINARY(Div)
KILN_MUTATE_BINARY(Mod)
KILN_MUTATE_BINARY(FloorDiv)
KILN_MUTATE_BINARY(FloorMod)
KILN_MUTATE_BINARY(Min)
KILN_MUTATE_BINARY(Max)
KILN_MUTATE_BINARY(EQ)
KILN_MUTATE_BINARY(NE)
KILN_MUTATE_BINARY(LT)
KILN_MUTATE_BINARY(LE)
KILN_MUTATE_BINARY(GT)
KILN_MUTATE_BINARY(GE)
KILN_MUTATE_BINARY(And)
KILN_MUTATE_BINARY(Or)
#undef KILN_MUTATE_BINARY

Expr IRMutator::visit(const Not* op) {
  Expr a = mutate(op->a);
  if (a.same_as(op->a)) return op;
  return make<Not>(op->dtype, a);
}

Expr IRMutator::visit(const Select* op) {
  Expr c = mutate(op->condition);
  Expr t = mutate(op->true_value);
  Expr f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
    return op;
  return make<Select>(op->dtype, c, t, f);
}

Expr IRMutator::visit(const Cast* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return op;
  return make<Cast>(op->dtype, v);
}

Expr IRMutator::visit(const Call* op) {
  std::vector<Expr> args = op->args;
  if (!mutate_all(&args)) return op;
  return make<Call>(op->dtype, op->op, std::move(args));
}

Expr IRMutator::visit(const Ramp* op) {
  Expr base = mutate(op->base);
  Expr stride = mutate(op->stride);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return op;
  return make<Ramp>(op->dtype, base, stride, op->lanes);
}

Expr IRMutator::visit(const Broadcast* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return op;
  return make<Broadcast>(op->dtype, v, op->lanes);
}

Expr IRMutator::visit(const Let* op) {
  Expr value = mutate(op->value);
  Expr body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return make<Let>(body->dtype, op->var, value, body);
}

Expr IRMutator::visit(const BufferLoad* op) {
  std::vector<Expr> indices = op->indices;
  bool changed = mutate_all(&indices);
  Ref<Buffer> buffer = mutate_buffer(op->buffer);
  if (!changed && buffer.same_as(op->buffer)) return op;
  return make<BufferLoad>(op->dtype, buffer, std::move(indices));
}

Expr IRMutator::visit(const Reduce* op) {
  bool changed = false;
  std::vector<IterVar> axis = op->axis;
  for (IterVar& iv : axis) {
    Range r = mutate(iv.dom);
    if (!same_range(r, iv.dom)) {
      iv.dom = r;
      changed = true;
    }
  }
  std::vector<Expr> source = op->source;
  changed |= mutate_all(&source);
  std::vector<Expr> init = op->init;
  changed |= mutate_all(&init);
  Expr condition = mutate(op->condition);
  changed |= !condition.same_as(op->condition);
  if (!changed) return op;
  auto r = copy(op);
  r->axis = std::move(axis);
  r->source = std::move(source);
  r->init = std::move(init);
  r->condition = condition;
  return r;
}

Stmt IRMutator::visit(const LetStmt* op) {
  Expr value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return make<LetStmt>(op->var, value, body);
}

Stmt IRMutator::visit(const AssertStmt* op) {
  Expr condition = mutate(op->condition);
  Stmt body = mutate(op->body);
  if (condition.same_as(op->condition) && body.same_as(op->body)) return op;
  return make<AssertStmt>(condition, op->message, body);
}

Stmt IRMutator::visit(const BufferStore* op) {
  Expr value = mutate(op->value);
  std::vector<Expr> indices = op->indices;
  bool changed = mutate_all(&indices);
  Ref<Buffer> buffer = mutate_buffer(op->buffer);
  if (!changed && value.same_as(op->value) && buffer.same_as(op->buffer)) return op;
  return make<BufferStore>(buffer, value, std::move(indices));
}

Stmt IRMutator::visit(const Allocate* op) {
  Ref<Buffer> buffer = mutate_buffer(op->buffer);
  Stmt body = mutate(op->body);
  if (buffer.same_as(op->buffer) && body.same_as(op->body)) return op;
  return make<Allocate>(buffer, body);
}

Stmt IRMutator::visit(const For* op) {
  Expr min = mutate(op->min);
  Expr extent = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
  auto n = copy(op);
  n->min = min;
  n->extent = extent;
  n->body = body;
  return n;
}

Stmt IRMutator::visit(const SeqStmt* op) {
  bool changed = false;
  std::vector<Stmt> stmts;
  stmts.reserve(op->seq.size());
  for (const Stmt& s : op->seq) {
    Stmt m = mutate(s);
    changed |= !m.same_as(s);
    stmts.push_back(m);
  }
  if (!changed) return op;
  return seq(std::move(stmts));
}

Stmt IRMutator::visit(const IfThenElse* op) {
  Expr condition = mutate(op->condition);
  Stmt then_case = mutate(op->then_case);
  Stmt else_case = mutate(op->else_case);
  if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case)) {
    return op;
  }
  return make<IfThenElse>(condition, then_case, else_case);
}

Stmt IRMutator::visit(const Evaluate* op) {
  Expr v = mutate(op->value);
  if (v.same_as(op->value)) return op;
  return make<Evaluate>(v);
}

Stmt IRMutator::visit(const Block* op) {
  bool changed = false;
  std::vector<IterVar> iter_vars = op->iter_vars;
  for (IterVar& iv : iter_vars) {
    Range r = mutate(iv.dom);
    if (!same_range(r, iv.dom)) {
      iv.dom = r;
      changed = true;
    }
  }
  auto mutate_regions = [&](std::vector<BufferRegion> regions) {
    for (BufferRegion& br : regions) {
      Ref<Buffer> b = mutate_buffer(br.buffer);
      if (!b.same_as(br.buffer)) {
        br.buffer = b;
        changed = true;
      }
      for (Range& range : br.region) {
        Range m = mutate(range);
        if (!same_range(m, range)) {
          range = m;
          changed = true;
        }
      }
    }
    return regions;
  };
  std::vector<BufferRegion> reads = mutate_regions(op->reads);
  std::vector<BufferRegion> writes = mutate_regions(op->writes);
  std::vector<Ref<Buffer>> alloc_buffers = op->alloc_buffers;
  for (Ref<Buffer>& b : alloc_buffers) {
    Ref<Buffer> m = mutate_buffer(b);
    if (!m.same_as(b)) {
      b = m;
      changed = true;
    }
  }
  Stmt init = mutate(op->init);
  Stmt body = mutate(op->body);
  changed |= !init.same_as(op->init) || !body.same_as(op->body);
  if (!changed) return op;
  auto n = copy(op);
  n->iter_vars = std::move(iter_vars);
  n->reads = std::move(reads);
  n->writes = std::move(writes);
  n->alloc_buffers = std::move(alloc_buffers);
  n->init = init;
  n->body = body;
  return n;
}

Stmt IRMutator::visit(const BlockRealize* op) {
  std::vector<Expr> values = op->iter_values;
  bool changed = mutate_all(&values);
  Expr predicate = mutate(op->predicate);
  Stmt block = mutate(Stmt(op->block));
  if (!changed && predicate.same_as(op->predicate) && block.same_as(op->block)) return op;
  Ref<Block> b = cast<Block>(block);
  internal_check(b.defined()) << "IRMutator: the block of a BlockRealize became a "
                              << kind_name(block->kind());
  return make<BlockRealize>(std::move(values), predicate, b);
}

// ---------------------------------------------------------------------------------------------
// Utilities

namespace {

class PostOrderVisitor : public IRVisitor {
 public:
  explicit PostOrderVisitor(const std::function<void(const Node*)>& f) : f_(f) {}
  void run(const Expr& e) { visit_expr(e); }
  void run(const Stmt& s) { visit_stmt(s); }

 private:
  using IRVisitor::visit;
#define KILN_POST_ORDER(Name)           \
  void visit(const Name* op) override { \
    IRVisitor::visit(op);               \
    f_(op);                             \
  }
  KILN_EXPR_NODE_LIST(KILN_POST_ORDER)
  KILN_STMT_NODE_LIST(KILN_POST_ORDER)
#undef KILN_POST_ORDER
  const std::function<void(const Node*)>& f_;
};

class Substituter : public IRMutator {
 public:
  explicit Substituter(const VarMap& vmap) : vmap_(vmap) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const Var* op) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? Expr(op) : it->second;
  }

 private:
  const VarMap& vmap_;
};

class VarUseFinder : public IRVisitor {
 public:
  explicit VarUseFinder(const std::function<bool(const Var*)>& pred) : pred_(pred) {}
  bool found = false;

 protected:
  using IRVisitor::visit;
  void visit(const Var* op) override { found = found || pred_(op); }
  void visit(const BufferLoad* op) override {
    found = found || pred_(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    found = found || pred_(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    found = found || pred_(op->loop_var.get());
    IRVisitor::visit(op);
  }

 private:
  const std::function<bool(const Var*)>& pred_;
};

}  // namespace

void post_order_visit(const Stmt& stmt, const std::function<void(const Node*)>& fvisit) {
  PostOrderVisitor(fvisit).run(stmt);
}

void post_order_visit(const Expr& expr, const std::function<void(const Node*)>& fvisit) {
  PostOrderVisitor(fvisit).run(expr);
}

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  return Substituter(vmap).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  return Substituter(vmap).mutate(s);
}

bool uses_var(const Expr& e, const std::function<bool(const Var*)>& pred) {
  VarUseFinder finder(pred);
  finder.visit_expr(e);
  return finder.found;
}

bool uses_var(const Stmt& s, const std::function<bool(const Var*)>& pred) {
  VarUseFinder finder(pred);
  finder.visit_stmt(s);
  return finder.found;
}

}  // namespace kiln::ir
