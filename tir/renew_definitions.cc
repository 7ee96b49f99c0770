// renew_definitions: copies a statement with new objects for every variable and buffer it
// defines (see renew_definitions.h).
#include "tir/renew_definitions.h"

#include <unordered_map>

#include "kiln/ir/functor.h"

namespace kiln::tir {

using namespace ir;

namespace {

class DefinitionRenewer : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const Var* op) override {
    auto it = vars_.find(op);
    return it == vars_.end() ? Expr(op) : Expr(it->second);
  }

  Expr visit(const Let* op) override {
    Expr value = mutate(op->value);
    Ref<Var> var = renew(op->var);
    Expr body = mutate(op->body);
    return make<Let>(op->dtype, var, value, body);
  }

  Stmt visit(const LetStmt* op) override {
    Expr value = mutate(op->value);
    Ref<Var> var = renew(op->var);
    Stmt body = mutate(op->body);
    return make<LetStmt>(var, value, body);
  }

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min);
    Expr extent = mutate(op->extent);
    Ref<Var> var = renew(op->loop_var);
    auto loop = copy(op);
    loop->loop_var = var;
    loop->min = min;
    loop->extent = extent;
    loop->body = mutate(op->body);
    return loop;
  }

  Stmt visit(const Allocate* op) override {
    Ref<Var> data = renew(op->buffer->data);
    Ref<Buffer> buffer = mutate_buffer(op->buffer);
    internal_check(buffer->data.same_as(data)) << "renew_definitions: buffer of Allocate";
    return make<Allocate>(buffer, mutate(op->body));
  }

  // A buffer whose data variable (or shape) refers to a renewed variable is copied once.
  Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) override {
    auto it = buffers_.find(buffer.get());
    if (it != buffers_.end()) return it->second;
    Expr data = mutate(Expr(buffer->data));
    std::vector<Expr> shape = buffer->shape;
    std::vector<Expr> strides = buffer->strides;
    bool changed = !data.same_as(buffer->data);
    changed |= mutate_all(&shape);
    changed |= mutate_all(&strides);
    Expr offset = buffer->elem_offset.defined() ? mutate(buffer->elem_offset) : Expr();
    changed |= !offset.same_as(buffer->elem_offset);
    if (!changed) return buffer;
    auto result = copy(buffer.get());
    result->data = cast<Var>(data);
    result->shape = std::move(shape);
    result->strides = std::move(strides);
    result->elem_offset = offset;
    buffers_.emplace(buffer.get(), result);
    return result;
  }

 private:
  Ref<Var> renew(const Ref<Var>& var) {
    auto fresh = make<Var>(var->name, var->dtype, var->is_size_var);
    vars_[var.get()] = fresh;
    return fresh;
  }

  std::unordered_map<const Var*, Ref<Var>> vars_;
  std::unordered_map<const Buffer*, Ref<Buffer>> buffers_;
};

}  // namespace

Stmt renew_definitions(const Stmt& s) {
  return DefinitionRenewer().mutate(s);
}

}  // namespace kiln::tir
