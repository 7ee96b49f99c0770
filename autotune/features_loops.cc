// The walk of a lowered program that the features and the prior analyse: every loop with its
// kind and extent, every store with the loops around it, its arithmetic and its accesses, and
// every allocation with its scope and how often it runs.
#include <algorithm>
#include <unordered_set>

#include "autotune/program_analysis.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"

namespace kiln::autotune::detail {

using namespace ir;

namespace {

// The loads of a stored value, their index loads included (an indirect access reads memory too).
class LoadCollector : public IRVisitor {
 public:
  std::vector<const BufferLoad*> loads;

 protected:
  using IRVisitor::visit;
  void visit(const BufferLoad* op) override {
    loads.push_back(op);
    IRVisitor::visit(op);
  }
};

double constant_elements(const Buffer& buffer) {
  double elements = 1;
  for (const Expr& extent : buffer.shape) {
    const int64_t* c = as_const_int(extent);
    if (c == nullptr) return 0;
    elements *= static_cast<double>(std::max<int64_t>(*c, 0));
  }
  return elements;
}

class ProgramWalker : public IRVisitor {
 public:
  ProgramWalker(const MachineModel& machine, const char* api) : machine_(machine), api_(api) {}
  Program program;

 protected:
  using IRVisitor::visit;

  // Step 1. Loops: the stack of loops around the statement being walked.
  void visit(const For* op) override {
    Loop loop;
    loop.var = op->loop_var.get();
    loop.kind = op->kind;
    const int64_t* extent = as_const_int(op->extent);
    if (extent != nullptr) {
      loop.extent = std::max<int64_t>(*extent, 0);
    } else {
      loop.symbolic = true;
      ++program.symbolic_loops;
    }
    int id = static_cast<int>(program.loops.size());
    program.loops.push_back(loop);
    if (op->kind == ForKind::kParallel) {
      program.parallel_loops.push_back(id);
      program.parallel_launches.push_back(executions());
    }
    stack_.push_back(id);
    visit_stmt(op->body);
    stack_.pop_back();
  }

  // The then branch of `if v == c` on a loop variable v runs once per run of that loop (the init
  // of a reduction that was not decomposed): its stores do not count the loop.
  void visit(const IfThenElse* op) override {
    visit_expr(op->condition);
    int pinned = pinned_loop(op->condition);
    if (pinned >= 0) {
      auto it = std::find(stack_.begin(), stack_.end(), pinned);
      stack_.erase(it);
      visit_stmt(op->then_case);
      stack_.insert(std::upper_bound(stack_.begin(), stack_.end(), pinned), pinned);
    } else {
      visit_stmt(op->then_case);
    }
    if (op->else_case.defined()) visit_stmt(op->else_case);
  }

  void visit(const LetStmt* op) override {
    lets_.emplace_back(op->var.get(), op->value);
    visit_stmt(op->body);
    lets_.pop_back();
  }

  // Step 2. Allocations: storage the function owns (stack or local scope).
  void visit(const Allocate* op) override {
    Allocation allocation;
    const Buffer& buffer = *op->buffer;
    allocation.bytes = constant_elements(buffer) * buffer.dtype.bytes();
    allocation.scope = buffer.scope;
    allocation.executions = executions();
    allocation.under_parallel = under_parallel();
    program.allocations.push_back(allocation);
    local_.insert(buffer.data.get());
    visit_stmt(op->body);
  }

  // Step 3. Stores: their loops, arithmetic and accesses.
  void visit(const BufferStore* op) override {
    Store store;
    store.loops = stack_;
    store.trips = executions();
    store.dtype = op->value->dtype;
    store.lanes = std::max(1, op->value->dtype.lanes());
    store.arithmetic = count_arithmetic(op->value, machine_);
    store.body = stack_.empty() ? -1 : stack_.back();
    for (int level = 0; level < store.depth(); ++level) {
      if (program.loops[stack_[level]].kind == ForKind::kParallel && store.parallel_level < 0) {
        store.parallel_level = level;
      }
    }
    Expr store_index = flat_index(*op->buffer, op->indices);
    store.accesses.push_back(make_access(*op->buffer, store_index, store.lanes, true));
    LoadCollector collector;
    collector.visit_expr(op->value);
    for (const BufferLoad* load : collector.loads) {
      Expr index = flat_index(*load->buffer, load->indices);
      Access access = make_access(*load->buffer, index, std::max(1, load->dtype.lanes()), false);
      access.accumulator =
          load->buffer->data.same_as(op->buffer->data) && structural_equal(index, store_index);
      store.accumulates |= access.accumulator;
      store.accesses.push_back(std::move(access));
    }
    program.stores.push_back(std::move(store));
  }

  void visit(const Block* op) override { refuse_block(op->name); }
  void visit(const BlockRealize* op) override { refuse_block(op->block->name); }

 private:
  [[noreturn]] void refuse_block(const std::string& name) {
    user_error(ErrorKind::kValue) << api_ << ": expected a lowered function (kiln.tir.lower), "
                                  << "found block '" << name << "'";
  }

  // The loop of the stack that `condition` (v == c, or likely(v == c)) fixes to one iteration.
  int pinned_loop(const Expr& condition) const {
    Expr cond = condition;
    if (const auto* call = cond.as<Call>(); call != nullptr && call->op == Builtin::Likely) {
      cond = call->args[0];
    }
    const auto* eq = cond.as<EQ>();
    if (eq == nullptr) return -1;
    const Var* var = eq->a.as<Var>();
    if (var == nullptr || as_const_int(eq->b) == nullptr) return -1;
    for (int id : stack_) {
      if (program.loops[id].var == var) return id;
    }
    return -1;
  }

  // How often the statement being walked runs per call.
  double executions() const {
    double trips = 1;
    for (int id : stack_) trips *= static_cast<double>(program.loops[id].extent);
    return trips;
  }

  bool under_parallel() const {
    return std::any_of(stack_.begin(), stack_.end(),
                       [&](int id) { return program.loops[id].kind == ForKind::kParallel; });
  }

  // Lowered accesses are one-dimensional; an access of more dimensions is flattened here.
  static Expr flat_index(const Buffer& buffer, const std::vector<Expr>& indices) {
    if (indices.size() == 1) return indices[0];
    if (indices.empty()) return int32_const(0);
    return buffer_offset(buffer, indices);
  }

  Access make_access(const Buffer& buffer, const Expr& index, int lanes, bool is_store) {
    Access access;
    access.data = buffer.data.get();
    access.buffer_name = buffer.name;
    access.element_bytes = std::max(1, buffer.dtype.element_of().bytes());
    access.lanes = lanes;
    access.is_store = is_store;
    access.is_local = buffer.scope != "global" || local_.count(buffer.data.get()) > 0;
    access.buffer_elements = constant_elements(buffer);
    std::vector<const Var*> loop_vars;
    loop_vars.reserve(stack_.size());
    for (int id : stack_) loop_vars.push_back(program.loops[id].var);
    analyze_index(index, loop_vars, lets_, &access);
    return access;
  }

  const MachineModel& machine_;
  const char* api_;
  std::vector<int> stack_;
  std::vector<std::pair<const Var*, Expr>> lets_;
  std::unordered_set<const Var*> local_;
};

}  // namespace

Program analyze_program(const PrimFunc& lowered, const MachineModel& machine, const char* api) {
  ProgramWalker walker(machine, api);
  walker.visit_stmt(lowered.body);
  compute_footprints(&walker.program, machine);
  return std::move(walker.program);
}

}  // namespace kiln::autotune::detail
