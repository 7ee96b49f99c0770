// Tuning tasks: the checks of make_task and the operation count of count_flops.
#include "kiln/autotune/task.h"

#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

using namespace ir;

namespace {

// The constant iteration count of a range, 1 when it is symbolic.
double trips(const Expr& extent) {
  const int64_t* c = as_const_int(extent);
  return c != nullptr && *c > 0 ? static_cast<double>(*c) : 1.0;
}

// Counts the arithmetic of each store, weighted by the iterations of what encloses it.
class FlopCounter : public IRVisitor {
 public:
  double total = 0;

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    double saved = scale_;
    scale_ *= trips(op->extent);
    visit_stmt(op->body);
    scale_ = saved;
  }

  // A block's iterators, not its enclosing loops, say how often its body runs when it is not
  // under loops of its own (te.create_prim_func nests blocks in loops, so loops count there).
  void visit(const BlockRealize* op) override { visit_stmt(op->block); }

  void visit(const BufferStore* op) override {
    total += scale_ * operations(op->value);
    IRVisitor::visit(op);
  }

 private:
  // The arithmetic nodes of a stored value, not counting the index arithmetic of its loads.
  class OperationCounter : public IRVisitor {
   public:
    double count = 0;

   protected:
    using IRVisitor::visit;
    void visit(const BufferLoad*) override {}
#define KILN_COUNT(Node)                \
  void visit(const Node* op) override { \
    count += op->dtype.lanes();         \
    IRVisitor::visit(op);               \
  }
    KILN_COUNT(Add)
    KILN_COUNT(Sub)
    KILN_COUNT(Mul)
    KILN_COUNT(Div)
    KILN_COUNT(FloorDiv)
    KILN_COUNT(Min)
    KILN_COUNT(Max)
    KILN_COUNT(Call)
#undef KILN_COUNT
  };

  static double operations(const Expr& value) {
    OperationCounter counter;
    counter.visit_expr(value);
    return counter.count;
  }

  double scale_ = 1;
};

}  // namespace

double count_flops(const PrimFunc& func) {
  FlopCounter counter;
  counter.visit_stmt(func.body);
  return counter.total;
}

double argument_bytes(const PrimFunc& func) {
  double bytes = 0;
  for (const auto& [param, buffer] : func.buffer_map) {
    double elements = 1;
    for (const Expr& extent : buffer->shape) {
      const int64_t* value = as_const_int(extent);
      if (value != nullptr) elements *= static_cast<double>(*value);
    }
    bytes += elements * buffer->dtype.bytes();
  }
  return bytes;
}

TuneTask make_task(const Ref<PrimFunc>& func, const std::string& target, const std::string& name,
                   double weight, const char* api) {
  user_check(func.defined()) << api << ": the function is null";
  for (const auto& [param, buffer] : func->buffer_map) {
    for (const Expr& extent : buffer->shape) {
      user_check(as_const_int(extent) != nullptr)
          << api << ": buffer " << buffer->name << " has the symbolic dimension "
          << to_script(extent)
          << "; tuning measures one concrete size: substitute its dimensions first";
    }
  }
  user_check(weight > 0) << api << ": the weight of task '" << name << "' must be positive, found "
                         << weight;
  TuneTask task;
  task.func = func;
  task.target = codegen::parse_target(target);
  task.name = name;
  if (task.name.empty()) {
    auto it = func->attrs.find("global_symbol");
    const auto* symbol = it == func->attrs.end() ? nullptr : it->second.as<StringImm>();
    task.name = symbol != nullptr ? symbol->value : "main";
  }
  task.weight = weight;
  task.workload_hash = structural_hash(func);
  task.flops = count_flops(*func);
  return task;
}

}  // namespace kiln::autotune
