// The walk of a lowered program that the features and the prior analyse: every loop with its
// kind and extent, every store with the loops around it, its arithmetic and its accesses, and
// every allocation with its scope and how often it runs.
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "autotune/program_analysis.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "kiln/support/error.h"
#include "kiln/tir/nontemporal.h"

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

  // Step 1. Loops: the stack of loops around the statement being walked. A loop of one
  // iteration is no loop (the compiler removes it): its variable is a constant of the body.
  void visit(const For* op) override {
    if (streamed_.empty()) {
      std::vector<const Var*> streamed =
          tir::streamed_buffers(*op, [this](const Var* data) { return local_.count(data) != 0; });
      if (!streamed.empty()) {
        streamed_ = std::move(streamed);
        visit_loop(op);
        streamed_.clear();
        return;
      }
    }
    visit_loop(op);
  }

  void visit_loop(const For* op) {
    bool thread = op->kind == ForKind::kThreadBinding && !op->thread_tag.empty();
    // The outermost loop bound to a thread index starts a kernel.
    bool starts_kernel = thread && kernel_ < 0;
    if (starts_kernel) {
      kernel_ = static_cast<int>(program.kernels.size());
      program.kernels.emplace_back();
    }
    if (thread) {
      const int64_t* extent = as_const_int(op->extent);
      int64_t value = extent != nullptr ? *extent : 1;
      int64_t& in_kernel = program.kernels[kernel_].extents[op->thread_tag];
      in_kernel = std::max(in_kernel, value);
      if (op->thread_tag.rfind("threadIdx.", 0) == 0) {
        threads_.push_back({op->loop_var.get(), op->thread_tag, value});
      }
    }
    visit_nest(op);
    if (thread && op->thread_tag.rfind("threadIdx.", 0) == 0) threads_.pop_back();
    if (starts_kernel) kernel_ = -1;
  }

  void visit_nest(const For* op) {
    Loop loop;
    loop.var = op->loop_var.get();
    loop.kind = op->kind;
    const int64_t* extent = as_const_int(op->extent);
    if (extent != nullptr && *extent == 1 && op->kind != ForKind::kParallel) {
      visit_stmt(op->body);
      return;
    }
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

  // The then branch of `if k_0 * 4 + k_1 == c` over loop variables runs once per run of those
  // loops (the init of a reduction that was not decomposed): its stores do not count them.
  void visit(const IfThenElse* op) override {
    visit_expr(op->condition);
    std::vector<int> pinned = pinned_loops(op->condition);
    std::vector<int> saved = stack_;
    for (int id : pinned) stack_.erase(std::find(stack_.begin(), stack_.end(), id));
    int saved_depth = branch_depth_;
    branch_depth_ = static_cast<int>(saved.size());
    visit_stmt(op->then_case);
    stack_ = std::move(saved);
    if (op->else_case.defined()) visit_stmt(op->else_case);
    branch_depth_ = saved_depth;
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
    if (kernel_ >= 0) {
      Kernel& kernel = program.kernels[kernel_];
      if (buffer.scope == "shared") kernel.shared_bytes += allocation.bytes;
      if (buffer.scope == "local") kernel.local_bytes += allocation.bytes;
    }
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
    store.kernel = kernel_;
    store.thread_trips = store.trips;
    for (const ThreadLoop& loop : threads_) {
      store.thread_trips /= static_cast<double>(std::max<int64_t>(1, loop.extent));
    }
    store.conditional = branch_depth_ >= static_cast<int>(stack_.size()) && !stack_.empty();
    store.streams = !streamed_.empty() && tir::is_streaming_store(*op, streamed_);
    for (int level = 0; level < store.depth(); ++level) {
      if (program.loops[stack_[level]].kind == ForKind::kParallel && store.parallel_level < 0) {
        store.parallel_level = level;
      }
    }
    Expr store_index = flat_index(*op->buffer, op->indices);
    store.accesses.push_back(make_access(*op->buffer, store_index, store.lanes, true));
    record_device(*op->buffer, store_index, store.trips, /*is_store=*/true);
    LoadCollector collector;
    collector.visit_expr(op->value);
    for (const BufferLoad* load : collector.loads) {
      Expr index = flat_index(*load->buffer, load->indices);
      Access access = make_access(*load->buffer, index, std::max(1, load->dtype.lanes()), false);
      double stride = access.affine && !access.coefficients.empty()
                          ? access.coefficients.back()
                          : std::numeric_limits<double>::quiet_NaN();
      record_device(*load->buffer, index, store.trips, /*is_store=*/false, stride);
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

  // The loops of the stack that `condition` fixes to one iteration: `e == c` (or likely(…))
  // where e is a sum of loop variables times positive constants.
  std::vector<int> pinned_loops(const Expr& condition) const {
    Expr cond = condition;
    if (const auto* call = cond.as<Call>(); call != nullptr && call->op == Builtin::Likely) {
      cond = call->args[0];
    }
    const auto* eq = cond.as<EQ>();
    if (eq == nullptr || as_const_int(eq->b) == nullptr) return {};
    std::vector<int> pinned;
    if (!collect_pinned(eq->a, &pinned)) return {};
    std::sort(pinned.begin(), pinned.end());
    pinned.erase(std::unique(pinned.begin(), pinned.end()), pinned.end());
    return pinned;
  }

  bool collect_pinned(const Expr& e, std::vector<int>* pinned) const {
    if (const auto* var = e.as<Var>()) {
      for (int id : stack_) {
        if (program.loops[id].var == var) {
          pinned->push_back(id);
          return true;
        }
      }
      return false;
    }
    if (const auto* add = e.as<Add>()) {
      return collect_pinned(add->a, pinned) && collect_pinned(add->b, pinned);
    }
    if (const auto* mul = e.as<Mul>()) {
      const int64_t* factor = as_const_int(mul->b);
      return factor != nullptr && *factor > 0 && collect_pinned(mul->a, pinned);
    }
    return false;
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

  // GPU: an access of shared or global memory by the threads of a kernel. A load of an element
  // an earlier load read in the same iteration of the innermost loop that is not unrolled, with
  // no store to its buffer in between, is not recorded: the compiler loads it once (the
  // unrolled statements of a register tile read each operand many times, and so do the
  // unrolled loops that virtual threads copy).
  void record_device(const Buffer& buffer, const Expr& index, double trips, bool is_store,
                     double inner_stride = std::numeric_limits<double>::quiet_NaN()) {
    bool shared = buffer.scope == "shared";
    if (threads_.empty() || (!shared && buffer.scope != "global")) return;
    if (is_store) {
      loads_[buffer.data.get()].clear();
    } else if (!first_load(buffer, index)) {
      return;
    }
    DeviceAccess access;
    access.index = index;
    access.data = buffer.data.get();
    access.buffer_bytes = constant_elements(buffer) * buffer.dtype.bytes();
    access.kernel = kernel_;
    access.is_store = is_store;
    access.group = is_store ? -1 : loads_epoch_;
    if (!stack_.empty()) {
      const Loop& inner = program.loops[stack_.back()];
      access.inner_var = inner.var;
      access.inner_extent = inner.symbolic ? 0 : inner.extent;
      access.inner_serial = inner.kind == ForKind::kSerial;
      access.inner_stride = inner_stride;
    }
    access.element_bytes = std::max(1, buffer.dtype.element_of().bytes());
    // A copy under the thread loop of its consumer also runs in its own thread loop of the same
    // index: per thread, the statement runs `trips` over the threadIdx loops' extents.
    for (const ThreadLoop& loop : threads_) {
      trips /= static_cast<double>(std::max<int64_t>(1, loop.extent));
    }
    access.trips = trips;
    access.threads = threads_;
    access.lets = lets_;
    (shared ? program.shared_accesses : program.global_accesses).push_back(std::move(access));
  }

  // Whether no load since the last store to `buffer` in the scope of record_device read `index`
  // of it. The variables of the unrolled loops inside the scope are named by their depth and
  // extent (a copy of a loop reads what the loop read); other variables by themselves
  // (structural hashing names free variables by their order only).
  bool first_load(const Buffer& buffer, const Expr& index) {
    size_t scope = stack_.size();
    while (scope > 0 && program.loops[stack_[scope - 1]].kind == ForKind::kUnrolled) --scope;
    int scope_loop = scope > 0 ? stack_[scope - 1] : -1;
    if (scope_loop != loads_scope_) {
      loads_scope_ = scope_loop;
      ++loads_epoch_;
      loads_.clear();
    }
    uint64_t key = structural_hash(index);
    for (const Var* var : variables_of(index)) {
      uint64_t name = reinterpret_cast<uintptr_t>(var);
      for (size_t level = scope; level < stack_.size(); ++level) {
        const Loop& loop = program.loops[stack_[level]];
        if (loop.var == var) {
          name = (level - scope + 1) * 1000003 + static_cast<uint64_t>(loop.extent);
        }
      }
      key = key * 1000003 + name;
    }
    return loads_[buffer.data.get()].insert(key).second;
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
  std::vector<ThreadLoop> threads_;  // the threadIdx loops around, of any extent
  int kernel_ = -1;                  // the kernel being walked, -1: none
  int loads_epoch_ = 0;              // changes with loads_scope_
  int loads_scope_ = -2;             // the loop whose iteration loads_ covers (first_load)
  std::unordered_map<const Var*, std::unordered_set<uint64_t>> loads_;  // per buffer
  int branch_depth_ = -1;  // loops around the innermost if being walked, -1: none
  std::vector<std::pair<const Var*, Expr>> lets_;
  std::unordered_set<const Var*> local_;
  std::vector<const Var*> streamed_;  // under a loop whose stores stream: their buffers
};

// LLVM's loop vectorizer runs at every opt level kiln uses: an innermost serial loop of scalar
// stores whose elements follow the loop (unit stride) and whose loads are unit stride or
// invariant becomes vector code of the target's lanes, as long as the trip count has that
// many iterations. A float reduction along the loop is not vectorized (that would reassociate
// the sum, which kiln does not allow); an integer one is. A store under an if inside the loop
// (a reduction's init that was not decomposed) keeps the loop scalar.
void auto_vectorize(Program* program, const MachineModel& machine) {
  std::map<int, std::vector<Store*>> bodies;
  for (Store& store : program->stores) {
    if (store.body >= 0) bodies[store.body].push_back(&store);
  }
  for (auto& [body, stores] : bodies) {
    const Loop& loop = program->loops[body];
    if (loop.kind != ForKind::kSerial && loop.kind != ForKind::kUnrolled) continue;
    bool legal = true;
    int lanes = 0;
    for (const Store* store : stores) {
      const Access& target = store->accesses[0];
      double stride = target.coefficients.back();
      bool reduction = stride == 0 && !store->dtype.is_float();
      legal = legal && store->lanes == 1 && !store->conditional && target.affine &&
              (stride == 1 || reduction);
      for (const Access& access : store->accesses) {
        double c = access.coefficients.back();
        legal = legal && access.affine && (c == 0 || c == 1);
      }
      int store_lanes = machine.lanes(store->dtype);
      lanes = lanes == 0 ? store_lanes : std::min(lanes, store_lanes);
    }
    int factor = 1;
    while (factor * 2 <= lanes && factor * 2 <= loop.extent) factor *= 2;
    if (!legal || factor < 2) continue;
    for (Store* store : stores) store->vector_factor = factor;
  }
}

}  // namespace

Program analyze_program(const PrimFunc& lowered, const MachineModel& machine, const char* api) {
  ProgramWalker walker(machine, api);
  walker.visit_stmt(lowered.body);
  compute_footprints(&walker.program, machine);
  auto_vectorize(&walker.program, machine);
  return std::move(walker.program);
}

}  // namespace kiln::autotune::detail
