// The IR verifier: one walk that tracks which variables are in scope and checks each node it
// meets; the first violation becomes an internal error with the function printed and the
// offending node underlined.
#include "kiln/tir/verify_ir.h"

#include <string>
#include <unordered_set>

#include "kiln/ir/functor.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"

namespace kiln::tir {

using namespace ir;

namespace {

// A violation: the node to underline and what is wrong.
struct Violation {
  const Node* node;
  std::string problem;
};

class Verifier : public IRVisitor {
 public:
  void run(const PrimFunc& func) {
    current_ = &func;
    // A packed entry point (make_packed_api) binds its parameters with LetStmts in the body.
    if (func.attrs.count("kiln.packed") > 0) {
      visit_stmt(func.body);
      return;
    }
    for (const Ref<Var>& param : func.params) define(param.get());
    for (const auto& [param, buffer] : func.buffer_map) {
      if (defined_ever_.count(buffer->data.get()) == 0) define(buffer->data.get());
      for (const auto* exprs : {&buffer->shape, &buffer->strides}) {
        for (const Expr& e : *exprs) define_free_vars(e);
      }
      define_free_vars(buffer->elem_offset);
    }
    visit_stmt(func.body);
  }

 protected:
  using IRVisitor::visit;

  // --- Expressions ----------------------------------------------------------------------------

  void visit(const Var* op) override { use(op, op); }

#define KILN_VERIFY_BINARY(Name)                                               \
  void visit(const Name* op) override {                                        \
    if (op->a->dtype != op->b->dtype) {                                        \
      fail(op, std::string("the operands of ") + kind_name(op->kind()) +       \
                   " have different dtypes: " + op->a->dtype.str() + " and " + \
                   op->b->dtype.str());                                        \
    }                                                                          \
    IRVisitor::visit(op);                                                      \
  }
  KILN_VERIFY_BINARY(Add)
  KILN_VERIFY_BINARY(Sub)
  KILN_VERIFY_BINARY(Mul)
  KILN_VERIFY_BINARY(Div)
  KILN_VERIFY_BINARY(Mod)
  KILN_VERIFY_BINARY(FloorDiv)
  KILN_VERIFY_BINARY(FloorMod)
  KILN_VERIFY_BINARY(Min)
  KILN_VERIFY_BINARY(Max)
  KILN_VERIFY_BINARY(EQ)
  KILN_VERIFY_BINARY(NE)
  KILN_VERIFY_BINARY(LT)
  KILN_VERIFY_BINARY(LE)
  KILN_VERIFY_BINARY(GT)
  KILN_VERIFY_BINARY(GE)
  KILN_VERIFY_BINARY(And)
  KILN_VERIFY_BINARY(Or)
#undef KILN_VERIFY_BINARY

  void visit(const Select* op) override {
    if (op->true_value->dtype != op->false_value->dtype) {
      fail(op, "the arms of Select have different dtypes: " + op->true_value->dtype.str() +
                   " and " + op->false_value->dtype.str());
    }
    IRVisitor::visit(op);
  }

  void visit(const Let* op) override {
    visit_expr(op->value);
    define(op->var.get());
    visit_expr(op->body);
    in_scope_.erase(op->var.get());
  }

  void visit(const BufferLoad* op) override {
    access(op, *op->buffer, op->indices.size());
    IRVisitor::visit(op);
  }

  void visit(const Reduce* op) override {
    for (const IterVar& iv : op->axis) define(iv.var.get());
    IRVisitor::visit(op);
    for (const IterVar& iv : op->axis) in_scope_.erase(iv.var.get());
  }

  // --- Statements: each records itself as the place to underline ------------------------------

  void visit(const LetStmt* op) override {
    Current here(this, op);
    visit_expr(op->value);
    define(op->var.get());
    visit_stmt(op->body);
    in_scope_.erase(op->var.get());
  }

  void visit(const AssertStmt* op) override {
    Current here(this, op);
    IRVisitor::visit(op);
  }

  void visit(const BufferStore* op) override {
    Current here(this, op);
    access(op, *op->buffer, op->indices.size());
    IRVisitor::visit(op);
  }

  void visit(const Allocate* op) override {
    Current here(this, op);
    visit_buffer(op->buffer.get());
    define(op->buffer->data.get());
    visit_stmt(op->body);
    in_scope_.erase(op->buffer->data.get());
  }

  void visit(const For* op) override {
    Current here(this, op);
    for (const Expr* bound : {&op->min, &op->extent}) {
      DataType dtype = (*bound)->dtype;
      if (!dtype.is_integer() || !dtype.is_scalar()) {
        fail(op, "the loop over " + op->loop_var->name + " has a bound of dtype " + dtype.str() +
                     "; loop bounds are scalar integers");
      }
    }
    visit_expr(op->min);
    visit_expr(op->extent);
    define(op->loop_var.get());
    visit_stmt(op->body);
    in_scope_.erase(op->loop_var.get());
  }

  void visit(const SeqStmt* op) override {
    Current here(this, op);
    IRVisitor::visit(op);
  }

  void visit(const IfThenElse* op) override {
    Current here(this, op);
    IRVisitor::visit(op);
  }

  void visit(const Evaluate* op) override {
    Current here(this, op);
    IRVisitor::visit(op);
  }

  void visit(const BlockRealize* op) override {
    Current here(this, op);
    if (op->iter_values.size() != op->block->iter_vars.size()) {
      fail(op, "block \"" + op->block->name + "\" has " +
                   std::to_string(op->block->iter_vars.size()) + " iterators but is bound to " +
                   std::to_string(op->iter_values.size()) + " values");
    }
    IRVisitor::visit(op);
  }

  void visit(const Block* op) override {
    Current here(this, op);
    for (const IterVar& iv : op->iter_vars) visit_range(iv.dom);
    for (const IterVar& iv : op->iter_vars) define(iv.var.get());
    for (const Ref<Buffer>& b : op->alloc_buffers) {
      visit_buffer(b.get());
      define(b->data.get());
    }
    for (const auto* regions : {&op->reads, &op->writes}) {
      for (const BufferRegion& r : *regions) {
        use(r.buffer->data.get(), op);
        for (const Range& range : r.region) visit_range(range);
      }
    }
    visit_stmt(op->init);
    visit_stmt(op->body);
    for (const IterVar& iv : op->iter_vars) in_scope_.erase(iv.var.get());
    for (const Ref<Buffer>& b : op->alloc_buffers) in_scope_.erase(b->data.get());
  }

 private:
  // Sets the statement to underline while it is being checked.
  class Current {
   public:
    Current(Verifier* v, const Node* node) : v_(v), saved_(v->current_) { v->current_ = node; }
    ~Current() { v_->current_ = saved_; }
    Current(const Current&) = delete;
    Current& operator=(const Current&) = delete;

   private:
    Verifier* v_;
    const Node* saved_;
  };

  [[noreturn]] void fail(const Node* node, std::string problem) {
    throw Violation{node, std::move(problem)};
  }

  void define(const Var* var) {
    if (!defined_ever_.insert(var).second) {
      fail(current_, "variable " + var->name + " is defined twice");
    }
    in_scope_.insert(var);
  }

  // Variables of a parameter buffer's shape are defined by the buffer (a symbolic dimension).
  void define_free_vars(const Expr& e) {
    if (!e.defined()) return;
    post_order_visit(e, [this](const Node* node) {
      if (node->kind() != NodeKind::Var) return;
      const auto* var = static_cast<const Var*>(node);
      if (defined_ever_.count(var) == 0) define(var);
    });
  }

  // `at` is an expression using the variable, or the statement around it.
  void use(const Var* var, const Node* at) {
    if (in_scope_.count(var) != 0) return;
    const char* where = defined_ever_.count(var) != 0 ? " outside the scope of its definition"
                                                      : " before or without a definition";
    fail(at->kind() == NodeKind::Var ? current_ : at, "variable " + var->name + " is used" + where);
  }

  void access(const Node* node, const Buffer& buffer, size_t index_count) {
    if (in_scope_.count(buffer.data.get()) == 0) {
      fail(node == nullptr ? current_ : node, "buffer " + buffer.name +
                                                  " is accessed but its data variable " +
                                                  buffer.data->name + " is not defined here");
    }
    if (index_count != buffer.shape.size()) {
      fail(node, "buffer " + buffer.name + " has " + std::to_string(buffer.shape.size()) +
                     " dimensions but is accessed with " + std::to_string(index_count) +
                     " indices");
    }
  }

  std::unordered_set<const Var*> in_scope_;
  std::unordered_set<const Var*> defined_ever_;
  const Node* current_ = nullptr;
};

}  // namespace

void verify_ir(const Ref<PrimFunc>& func, const std::string& after_pass) {
  try {
    Verifier().run(*func);
  } catch (const Violation& v) {
    std::string name = "main";
    auto symbol = func->attrs.find("global_symbol");
    if (symbol != func->attrs.end()) {
      if (const auto* s = symbol->second.as<StringImm>()) name = s->value;
    }
    PrintOptions options;
    options.mark = v.node;
    options.mark_note = v.problem;
    internal_error << "verify_ir: the IR of " << name << " is malformed after " << after_pass
                   << ": " << v.problem << "\n"
                   << to_script(func, name, options);
  }
}

}  // namespace kiln::tir
