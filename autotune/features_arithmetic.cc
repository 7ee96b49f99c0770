// The arithmetic of a stored value by kind, in element operations and in weighted vector
// instructions for the target: what the features count per store and the prior's compute time.
#include <cinttypes>
#include <cstdio>

#include "autotune/program_analysis.h"
#include "kiln/ir/functor.h"

namespace kiln::autotune::detail {

using namespace ir;

namespace {

// Issue cost of one vector instruction of each kind, in units of an add on one of two vector
// pipes. Division and square root are not pipelined on any current core; math calls expand into
// polynomials (lower_intrinsics) or library calls of a few dozen instructions; integer division
// has no vector instruction on x86 and is done lane by lane.
constexpr double kSimpleCost = 1;
constexpr double kDivideCost = 8;
constexpr double kMathCost = 20;
constexpr double kIntDivideCost = 10;
// The threads of a warp, which share a warp-level matrix instruction (a constant of PTX).
constexpr double kWarpThreads = 32;

bool is_float(const DataType& t) {
  return t.is_float();
}

class ArithmeticCounter : public IRVisitor {
 public:
  explicit ArithmeticCounter(const MachineModel& machine) : machine_(machine) {}
  Arithmetic counts;

 protected:
  using IRVisitor::visit;

  // Loads are leaves: the arithmetic of their index is address computation.
  void visit(const BufferLoad*) override {}
  // Constants that are broadcast or ramps of constants are hoisted out of loops.
  void visit(const Broadcast* op) override { visit_expr(op->value); }
  void visit(const Ramp* op) override {
    visit_expr(op->base);
    visit_expr(op->stride);
  }

  void visit(const Add* op) override { add_or_subtract(op); }
  void visit(const Sub* op) override { add_or_subtract(op); }

  void visit(const Mul* op) override {
    if (is_float(op->dtype)) {
      record(op->dtype, &Arithmetic::float_mul, 1, kSimpleCost, true);
    } else {
      record(op->dtype, &Arithmetic::int_arith, 1, kSimpleCost, false);
    }
    IRVisitor::visit(op);
  }

  void visit(const Div* op) override { divide(op->dtype, op); }
  void visit(const FloorDiv* op) override { divide(op->dtype, op); }
  void visit(const Mod* op) override { divide(op->dtype, op); }
  void visit(const FloorMod* op) override { divide(op->dtype, op); }

  void visit(const Min* op) override { min_max(op); }
  void visit(const Max* op) override { min_max(op); }

  void visit(const EQ* op) override { compare(op); }
  void visit(const NE* op) override { compare(op); }
  void visit(const LT* op) override { compare(op); }
  void visit(const LE* op) override { compare(op); }
  void visit(const GT* op) override { compare(op); }
  void visit(const GE* op) override { compare(op); }

  void visit(const And* op) override { logic(op->dtype, op); }
  void visit(const Or* op) override { logic(op->dtype, op); }
  void visit(const Not* op) override {
    record(op->dtype, &Arithmetic::bool_logic, 1, kSimpleCost, false);
    IRVisitor::visit(op);
  }

  void visit(const Select* op) override {
    select_like(op->dtype);
    IRVisitor::visit(op);
  }

  void visit(const Cast* op) override {
    record(op->dtype, &Arithmetic::casts, 1, kSimpleCost, false);
    IRVisitor::visit(op);
  }

  void visit(const Call* op) override {
    switch (op->op) {
      case Builtin::IfThenElse:
        select_like(op->dtype);
        break;
      case Builtin::Floor:
      case Builtin::Ceil:
      case Builtin::Round:
      case Builtin::Trunc:
      case Builtin::Abs:
      case Builtin::IsNan:
        if (is_float(op->dtype) || op->op == Builtin::IsNan) {
          record(op->dtype, &Arithmetic::float_math, 1, kSimpleCost, true);
        } else {
          record(op->dtype, &Arithmetic::int_arith, 1, kSimpleCost, false);
        }
        break;
      case Builtin::Sqrt:
      case Builtin::Rsqrt:
        record(op->dtype, &Arithmetic::float_math, 1, kDivideCost, true);
        break;
      case Builtin::ShiftLeft:
      case Builtin::ShiftRight:
      case Builtin::BitwiseAnd:
      case Builtin::BitwiseOr:
      case Builtin::BitwiseXor:
      case Builtin::BitwiseNot:
      case Builtin::Popcount:
        record(op->dtype, &Arithmetic::int_bitwise, 1, kSimpleCost, false);
        break;
      case Builtin::PtxMma:
        matrix(op);
        break;
      case Builtin::PtxLdmatrix:  // a load (of the shared row its argument reads)
      case Builtin::PtxCpAsync:   // a copy (its argument's load, the store's)
      case Builtin::PtxCpAsyncCommitGroup:
      case Builtin::PtxCpAsyncWaitGroup:
      case Builtin::Likely:
      case Builtin::Reinterpret:
      case Builtin::AddressOf:
      case Builtin::StorageSync:
      case Builtin::DeviceLaunch:
      case Builtin::DeviceAlloc:
      case Builtin::DeviceFree:
      case Builtin::WarpShuffleDown:
      case Builtin::PackedArgDeviceId:
      case Builtin::PackedArgData:
      case Builtin::PackedArgShape:
      case Builtin::PackedArgInt:
      case Builtin::PackedArgFloat:
        break;
      default:  // exp, log, tanh, … and extern or LLVM intrinsic calls
        record(op->dtype, &Arithmetic::float_math, 1, kMathCost, true);
        break;
    }
    IRVisitor::visit(op);
  }

 private:
  // Counts `ops` operations of `type` under `kind`, `ops` * cost instructions per register.
  void record(const DataType& type, double Arithmetic::*kind, double ops, double cost,
              bool floating) {
    double lanes = std::max(1, type.lanes());
    counts.*kind += ops * lanes;
    counts.element_ops += ops * lanes;
    if (floating) counts.float_ops += ops * lanes;
    if (lanes > 1) counts.vector_element_ops += ops * lanes;
    counts.issue_slots += cost * machine_.vectors(type);
  }

  template <class Node>
  void add_or_subtract(const Node* op) {
    if (!is_float(op->dtype)) {
      record(op->dtype, &Arithmetic::int_arith, 1, kSimpleCost, false);
      IRVisitor::visit(op);
      return;
    }
    // A float multiply feeding this add is one fused multiply-add where the target contracts.
    const Mul* fused = nullptr;
    if (machine_.fma) {
      fused = op->a.template as<Mul>();
      if (fused == nullptr) fused = op->b.template as<Mul>();
    }
    if (fused == nullptr) {
      record(op->dtype, &Arithmetic::float_add_sub, 1, kSimpleCost, true);
      IRVisitor::visit(op);
      return;
    }
    record(op->dtype, &Arithmetic::float_fma, 2, kSimpleCost, true);
    const Expr& other = op->a.get() == fused ? op->b : op->a;
    visit_expr(fused->a);
    visit_expr(fused->b);
    visit_expr(other);
  }

  void divide(const DataType& type, const BinaryNode* op) {
    if (is_float(type)) {
      record(type, &Arithmetic::float_div, 1, kDivideCost, true);
    } else {
      record(type, &Arithmetic::int_div_mod, 1, kIntDivideCost, false);
    }
    visit_expr(op->a);
    visit_expr(op->b);
  }

  void min_max(const BinaryNode* op) {
    if (is_float(op->dtype)) {
      record(op->dtype, &Arithmetic::float_min_max, 1, kSimpleCost, true);
    } else {
      record(op->dtype, &Arithmetic::int_arith, 1, kSimpleCost, false);
    }
    visit_expr(op->a);
    visit_expr(op->b);
  }

  void compare(const BinaryNode* op) {
    if (is_float(op->a->dtype)) {
      record(op->a->dtype, &Arithmetic::float_compare_select, 1, kSimpleCost, true);
    } else {
      record(op->a->dtype, &Arithmetic::int_arith, 1, kSimpleCost, false);
    }
    visit_expr(op->a);
    visit_expr(op->b);
  }

  void logic(const DataType& type, const BinaryNode* op) {
    record(type, &Arithmetic::bool_logic, 1, kSimpleCost, false);
    visit_expr(op->a);
    visit_expr(op->b);
  }

  // A warp's matrix multiply-accumulate "mMnNkK.…" (ptx_mma's first argument): 2 M N K flops,
  // a 32nd of them per thread, one instruction.
  void matrix(const Call* op) {
    const auto* shape = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
    int64_t m = 0, n = 0, k = 0;
    if (shape == nullptr ||
        std::sscanf(shape->value.c_str(), "m%" SCNd64 "n%" SCNd64 "k%" SCNd64, &m, &n, &k) != 3) {
      record(op->dtype, &Arithmetic::float_math, 1, kMathCost, true);
      return;
    }
    double flops = 2.0 * static_cast<double>(m * n * k) / kWarpThreads;
    counts.float_matrix += flops;
    counts.element_ops += flops;
    counts.float_ops += flops;
    counts.matrix_instructions += 1;
    counts.issue_slots += kSimpleCost;
  }

  void select_like(const DataType& type) {
    if (is_float(type)) {
      record(type, &Arithmetic::float_compare_select, 1, kSimpleCost, true);
    } else {
      record(type, &Arithmetic::int_arith, 1, kSimpleCost, false);
    }
  }

  const MachineModel& machine_;
};

}  // namespace

Arithmetic count_arithmetic(const Expr& value, const MachineModel& machine) {
  ArithmeticCounter counter(machine);
  counter.visit_expr(value);
  return counter.counts;
}

}  // namespace kiln::autotune::detail
