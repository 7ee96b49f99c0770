// Compilation of expressions: the dispatch on the node kind, the scope bookkeeping of the
// Compiler, and the nodes that need no arithmetic rule of their own (constants, variables, let,
// select, vectors).
#include <cstring>

#include "compiler.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

// ---------------------------------------------------------------------------------------------
// Scope

int Compiler::bind(const Var* var) {
  auto [it, inserted] = slots_.try_emplace(var, VarSlot{next_slot_, 0});
  if (inserted) next_slot_ += var->dtype.lanes() > 0 ? var->dtype.lanes() : 1;
  ++it->second.depth;
  return it->second.slot;
}

void Compiler::unbind(const Var* var) {
  auto it = slots_.find(var);
  internal_check(it != slots_.end() && it->second.depth > 0)
      << "tir.interpret: unbinding variable " << var->name << " that is not in scope";
  --it->second.depth;
}

int Compiler::slot_of(const Var* var, const std::string& context) const {
  auto it = slots_.find(var);
  user_check(it != slots_.end() && it->second.depth > 0)
      << "tir.interpret: variable " << var->name << " is used in " << context
      << " outside the scope that defines it (a loop, let, block iterator, parameter or "
         "symbolic shape)";
  return it->second.slot;
}

int Compiler::storage_of_data(const Var* data) const {
  auto it = storages_.find(data);
  return it != storages_.end() && it->second.depth > 0 ? it->second.slot : -1;
}

bool Compiler::in_scope(const Var* var) const {
  auto it = slots_.find(var);
  return it != slots_.end() && it->second.depth > 0;
}

int Compiler::bind_storage(const Var* data) {
  auto [it, inserted] = storages_.try_emplace(data, VarSlot{num_storages(), 0});
  if (inserted) written_.push_back(false);
  ++it->second.depth;
  return it->second.slot;
}

void Compiler::unbind_storage(const Var* data) {
  auto it = storages_.find(data);
  internal_check(it != storages_.end() && it->second.depth > 0)
      << "tir.interpret: unbinding storage " << data->name << " that is not in scope";
  --it->second.depth;
}

int Compiler::storage_of(const Buffer& buffer) const {
  internal_check(buffer.data.defined())
      << "tir.interpret: buffer " << buffer.name << " has no data";
  auto it = storages_.find(buffer.data.get());
  user_check(it != storages_.end() && it->second.depth > 0)
      << "tir.interpret: buffer " << buffer.name << " is accessed where its storage (data "
      << buffer.data->name << ") is neither a parameter nor allocated by an enclosing Allocate "
      << "or block";
  return it->second.slot;
}

// ---------------------------------------------------------------------------------------------
// Simple nodes

namespace {

class ConstCode final : public ResultCode {
 public:
  ConstCode(DataType dtype, Lane value) : ResultCode(dtype) { out()[0] = value; }
  const Lane* eval(Frame&) override { return out(); }
};

class VarCode final : public ExprCode {
 public:
  VarCode(DataType dtype, int slot) : ExprCode(dtype), slot_(slot) {}
  const Lane* eval(Frame& frame) override { return &frame.slots[slot_]; }
  int var_slot() const override { return slot_; }

 private:
  int slot_;
};

class NotCode final : public ResultCode {
 public:
  NotCode(DataType dtype, ExprCodePtr a) : ResultCode(dtype), a_(std::move(a)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i].i = a[i].i == 0;
    return out;
  }

 private:
  ExprCodePtr a_;
};

// Both arms are evaluated (kiln/ir/expr.h); the condition has one lane or one per value lane.
class SelectCode final : public ResultCode {
 public:
  SelectCode(DataType dtype, ExprCodePtr c, ExprCodePtr t, ExprCodePtr f)
      : ResultCode(dtype), c_(std::move(c)), t_(std::move(t)), f_(std::move(f)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* c = c_->eval(frame);
    const Lane* t = t_->eval(frame);
    const Lane* f = f_->eval(frame);
    Lane* out = this->out();
    bool scalar_condition = c_->lanes() == 1;
    for (int i = 0; i < lanes(); ++i) out[i] = c[scalar_condition ? 0 : i].i != 0 ? t[i] : f[i];
    return out;
  }

 private:
  ExprCodePtr c_, t_, f_;
};

class RampCode final : public ResultCode {
 public:
  RampCode(DataType dtype, ExprCodePtr base, ExprCodePtr stride)
      : ResultCode(dtype),
        base_(std::move(base)),
        stride_(std::move(stride)),
        kind_(num_kind(dtype)),
        bits_(dtype.bits()) {}
  const Lane* eval(Frame& frame) override {
    uint64_t base = static_cast<uint64_t>(base_->eval(frame)[0].i);
    uint64_t stride = static_cast<uint64_t>(stride_->eval(frame)[0].i);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      int64_t v = static_cast<int64_t>(base + stride * static_cast<uint64_t>(i));
      out[i].i = kind_ == NumKind::kInt ? wrap_signed(v, bits_) : wrap_unsigned(v, bits_);
    }
    return out;
  }

 private:
  ExprCodePtr base_, stride_;
  NumKind kind_;
  int bits_;
};

class BroadcastCode final : public ResultCode {
 public:
  BroadcastCode(DataType dtype, ExprCodePtr value) : ResultCode(dtype), value_(std::move(value)) {}
  const Lane* eval(Frame& frame) override {
    Lane v = value_->eval(frame)[0];
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i] = v;
    return out;
  }

 private:
  ExprCodePtr value_;
};

class LetCode final : public ExprCode {
 public:
  LetCode(DataType dtype, int slot, ExprCodePtr value, ExprCodePtr body)
      : ExprCode(dtype), slot_(slot), value_(std::move(value)), body_(std::move(body)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* v = value_->eval(frame);
    std::memcpy(&frame.slots[slot_], v, sizeof(Lane) * value_->lanes());
    return body_->eval(frame);
  }

 private:
  int slot_;
  ExprCodePtr value_, body_;
};

void check_evaluable(const Expr& e, const char* what) {
  user_check(!e->dtype.is_handle() && !e->dtype.is_void())
      << "tir.interpret: " << what << " " << to_script(e) << " of dtype " << e->dtype
      << " is not supported by the interpreter (it computes only with numbers and bools)";
}

void check_lanes(const char* node, const ExprCodePtr& value, int lanes) {
  internal_check(value->lanes() == lanes || value->lanes() == 1)
      << "tir.interpret: a " << node << " operand has " << value->lanes()
      << " lanes where the node has " << lanes;
}

}  // namespace

ExprCodePtr Compiler::expr(const Expr& e) {
  internal_check(e.defined()) << "tir.interpret: null expression";
  switch (e->kind()) {
    case NodeKind::IntImm: {
      Lane v;
      v.i = static_cast<const IntImm*>(e.get())->value;
      return std::make_unique<ConstCode>(e->dtype, v);
    }
    case NodeKind::FloatImm: {
      // A FloatImm of float16/bfloat16 may hold more precision than its dtype: round it once.
      Lane v;
      v.f = static_cast<const FloatImm*>(e.get())->value;
      return std::make_unique<ConstCode>(
          e->dtype, convert(v, ScalarType{NumKind::kFloat64, 64}, scalar_type(e->dtype)));
    }
    case NodeKind::StringImm:
      user_error(ErrorKind::kValue)
          << "tir.interpret: the string constant " << to_script(e)
          << " cannot be evaluated (strings are only arguments of extern calls)";
    case NodeKind::Var: {
      const auto* var = static_cast<const Var*>(e.get());
      check_evaluable(e, "the variable");
      return std::make_unique<VarCode>(e->dtype, slot_of(var, "an expression"));
    }
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Min:
    case NodeKind::Max:
    case NodeKind::EQ:
    case NodeKind::NE:
    case NodeKind::LT:
    case NodeKind::LE:
    case NodeKind::GT:
    case NodeKind::GE:
    case NodeKind::And:
    case NodeKind::Or: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      ExprCodePtr a = expr(op->a);
      ExprCodePtr b = expr(op->b);
      internal_check(a->dtype() == b->dtype())
          << "tir.interpret: operands of " << kind_name(e->kind()) << " have dtypes " << a->dtype()
          << " and " << b->dtype();
      return make_binary_code(*op, std::move(a), std::move(b));
    }
    case NodeKind::Not: {
      const auto* op = static_cast<const Not*>(e.get());
      return std::make_unique<NotCode>(e->dtype, expr(op->a));
    }
    case NodeKind::Select: {
      const auto* op = static_cast<const Select*>(e.get());
      ExprCodePtr c = expr(op->condition);
      ExprCodePtr t = expr(op->true_value);
      ExprCodePtr f = expr(op->false_value);
      check_lanes("Select", c, e->dtype.lanes());
      internal_check(t->lanes() == e->dtype.lanes() && f->lanes() == e->dtype.lanes())
          << "tir.interpret: Select arms do not have the node's lanes";
      return std::make_unique<SelectCode>(e->dtype, std::move(c), std::move(t), std::move(f));
    }
    case NodeKind::Cast: {
      const auto* op = static_cast<const Cast*>(e.get());
      check_evaluable(e, "the cast");
      return make_cast_code(e->dtype, expr(op->value));
    }
    case NodeKind::Call:
      return compile_call(*this, *static_cast<const Call*>(e.get()));
    case NodeKind::Ramp: {
      const auto* op = static_cast<const Ramp*>(e.get());
      return std::make_unique<RampCode>(e->dtype, expr(op->base), expr(op->stride));
    }
    case NodeKind::Broadcast: {
      const auto* op = static_cast<const Broadcast*>(e.get());
      return std::make_unique<BroadcastCode>(e->dtype, expr(op->value));
    }
    case NodeKind::Let: {
      const auto* op = static_cast<const Let*>(e.get());
      check_evaluable(op->var, "the let variable");
      ExprCodePtr value = expr(op->value);
      ScopedVar var(*this, op->var.get());
      ExprCodePtr body = expr(op->body);
      return std::make_unique<LetCode>(e->dtype, var.slot(), std::move(value), std::move(body));
    }
    case NodeKind::BufferLoad:
      return compile_load(*this, *static_cast<const BufferLoad*>(e.get()));
    case NodeKind::Reduce:
      user_error(ErrorKind::kValue)
          << "tir.interpret: a Reduce expression is found in the function body; reductions "
             "exist only in te.compute bodies and te.create_prim_func turns them into blocks";
    default:
      break;
  }
  internal_error << "tir.interpret: " << kind_name(e->kind()) << " is not an expression";
}

}  // namespace kiln::interpreter
