// Compilation of statements: loops (every kind runs sequentially), sequences, conditionals,
// let, assert, evaluate, allocation, and blocks with their iterator bindings, predicate,
// allocated buffers and reduction init. Inside a GPU grid (gpu_code.cc), a statement that
// contains a barrier is compiled with `state` >= 0: its `run` keeps where the thread stands in
// Frame::states from that index on, so that a thread stopped at a barrier goes on from there.
#include <cstring>

#include "compiler.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

// A serial loop (of any kind). Resumable: states k, min, extent and whether it has started.
class ForCode final : public StmtCode {
 public:
  ForCode(int slot, ExprCodePtr min, ExprCodePtr extent, StmtCodePtr body, int state)
      : slot_(slot),
        min_(std::move(min)),
        extent_(std::move(extent)),
        body_(std::move(body)),
        state_(state) {}
  void exec(Frame& frame) override {
    int64_t min = min_->eval(frame)[0].i;
    int64_t extent = extent_->eval(frame)[0].i;
    for (int64_t k = 0; k < extent; ++k) {
      frame.slots[slot_].i = min + k;
      body_->exec(frame);
    }
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t* state = &frame.states[state_];  // started, k, min, extent
    if (state[0] == 0) {
      state[0] = 1;
      state[1] = 0;
      state[2] = min_->eval(frame)[0].i;
      state[3] = extent_->eval(frame)[0].i;
    }
    for (; state[1] < state[3]; ++state[1]) {
      frame.slots[slot_].i = state[2] + state[1];
      if (!body_->run(frame)) return false;
    }
    state[0] = 0;
    return true;
  }
  static constexpr int kStates = 4;

 private:
  int slot_;
  ExprCodePtr min_, extent_;
  StmtCodePtr body_;
  int state_;
};

class SeqCode final : public StmtCode {
 public:
  SeqCode(std::vector<StmtCodePtr> seq, int state) : seq_(std::move(seq)), state_(state) {}
  void exec(Frame& frame) override {
    for (const StmtCodePtr& s : seq_) s->exec(frame);
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& next = frame.states[state_];
    for (; next < static_cast<int64_t>(seq_.size()); ++next) {
      if (!seq_[next]->run(frame)) return false;
    }
    next = 0;
    return true;
  }

 private:
  std::vector<StmtCodePtr> seq_;
  int state_;
};

class IfCode final : public StmtCode {
 public:
  IfCode(ExprCodePtr condition, StmtCodePtr then_case, StmtCodePtr else_case, int state)
      : condition_(std::move(condition)),
        then_case_(std::move(then_case)),
        else_case_(std::move(else_case)),
        state_(state) {}
  void exec(Frame& frame) override {
    if (condition_->eval(frame)[0].i != 0) {
      then_case_->exec(frame);
    } else if (else_case_) {
      else_case_->exec(frame);
    }
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& branch = frame.states[state_];  // 0: not yet decided, 1: then, 2: else
    if (branch == 0) branch = condition_->eval(frame)[0].i != 0 ? 1 : 2;
    StmtCode* arm = branch == 1 ? then_case_.get() : else_case_.get();
    if (arm != nullptr && !arm->run(frame)) return false;
    branch = 0;
    return true;
  }

 private:
  ExprCodePtr condition_;
  StmtCodePtr then_case_, else_case_;
  int state_;
};

class LetStmtCode final : public StmtCode {
 public:
  LetStmtCode(int slot, ExprCodePtr value, StmtCodePtr body, int state)
      : slot_(slot), value_(std::move(value)), body_(std::move(body)), state_(state) {}
  void exec(Frame& frame) override {
    bind(frame);
    body_->exec(frame);
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& bound = frame.states[state_];
    if (bound == 0) {
      bind(frame);
      bound = 1;
    }
    if (!body_->run(frame)) return false;
    bound = 0;
    return true;
  }

 private:
  void bind(Frame& frame) {
    const Lane* v = value_->eval(frame);
    std::memcpy(&frame.slots[slot_], v, sizeof(Lane) * value_->lanes());
  }

  int slot_;
  ExprCodePtr value_;
  StmtCodePtr body_;
  int state_;
};

class AssertCode final : public StmtCode {
 public:
  AssertCode(ExprCodePtr condition, std::string message, StmtCodePtr body, int state)
      : condition_(std::move(condition)),
        message_(std::move(message)),
        body_(std::move(body)),
        state_(state) {}
  void exec(Frame& frame) override {
    check(frame);
    body_->exec(frame);
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& checked = frame.states[state_];
    if (checked == 0) {
      check(frame);
      checked = 1;
    }
    if (!body_->run(frame)) return false;
    checked = 0;
    return true;
  }

 private:
  void check(Frame& frame) {
    if (condition_->eval(frame)[0].i == 0) {
      user_error(ErrorKind::kRuntime) << "tir.interpret: assertion failed: " << message_;
    }
  }

  ExprCodePtr condition_;
  std::string message_;
  StmtCodePtr body_;
  int state_;
};

class EvaluateCode final : public StmtCode {
 public:
  explicit EvaluateCode(ExprCodePtr value) : value_(std::move(value)) {}
  void exec(Frame& frame) override { value_->eval(frame); }

 private:
  ExprCodePtr value_;
};

class NoOpCode final : public StmtCode {
 public:
  void exec(Frame&) override {}
};

class AllocateCode final : public StmtCode {
 public:
  AllocateCode(std::unique_ptr<AllocationCode> allocation, StmtCodePtr body, int state)
      : allocation_(std::move(allocation)), body_(std::move(body)), state_(state) {}
  void exec(Frame& frame) override {
    allocation_->enter(frame);
    body_->exec(frame);
    allocation_->exit(frame);
  }
  bool run(Frame& frame) override {
    if (state_ < 0) return StmtCode::run(frame);
    int64_t& entered = frame.states[state_];
    if (entered == 0) {
      allocation_->enter(frame);
      entered = 1;
    }
    if (!body_->run(frame)) return false;
    allocation_->exit(frame);
    entered = 0;
    return true;
  }

 private:
  std::unique_ptr<AllocationCode> allocation_;
  StmtCodePtr body_;
  int state_;
};

// An integer that is usually a compile-time constant (a block iterator's domain bound).
struct IntValue {
  int64_t constant = 0;
  ExprCodePtr code;
  int64_t eval(Frame& frame) const { return code ? code->eval(frame)[0].i : constant; }
};

IntValue compile_int(Compiler& compiler, const Expr& e) {
  IntValue v;
  if (const int64_t* c = as_const_int(e)) {
    v.constant = *c;
  } else {
    v.code = compiler.expr(e);
  }
  return v;
}

// A block iterator: its slot, the expression it is bound to, and its domain.
struct BlockIter {
  const Var* var = nullptr;
  int slot = 0;
  ExprCodePtr value;
  int value_slot = -1;  // >= 0: the value is this variable (the usual loop binding)
  IntValue min, extent;
  bool is_reduce = false;
};

// A BlockRealize and its Block (or a Block without iterators on its own). Steps of one run:
// 1. skip when the predicate is false; 2. bind the iterators and check that each value lies in
// its domain; 3. allocate the block's buffers; 4. run init when every reduce iterator is at the
// minimum of its domain; 5. run the body; 6. free the buffers.
class BlockCode final : public StmtCode {
 public:
  BlockCode(std::string name, ExprCodePtr predicate, std::vector<BlockIter> iters,
            std::vector<std::unique_ptr<AllocationCode>> allocations, StmtCodePtr init,
            StmtCodePtr body)
      : name_(std::move(name)),
        predicate_(std::move(predicate)),
        iters_(std::move(iters)),
        allocations_(std::move(allocations)),
        init_(std::move(init)),
        body_(std::move(body)),
        values_(iters_.size()) {}

  void exec(Frame& frame) override {
    // Step 1.
    if (predicate_ && predicate_->eval(frame)[0].i == 0) return;
    // Step 2. The values are computed before any iterator is rebound.
    for (size_t k = 0; k < iters_.size(); ++k) {
      const BlockIter& iter = iters_[k];
      values_[k] =
          iter.value_slot >= 0 ? frame.slots[iter.value_slot].i : iter.value->eval(frame)[0].i;
    }
    for (size_t k = 0; k < iters_.size(); ++k) {
      int64_t min = iters_[k].min.eval(frame);
      int64_t extent = iters_[k].extent.eval(frame);
      if (values_[k] < min || values_[k] >= min + extent) raise_outside_domain(k, min, extent);
      frame.slots[iters_[k].slot].i = values_[k];
    }
    // Step 3.
    for (const auto& allocation : allocations_) allocation->enter(frame);
    // Step 4.
    if (init_) {
      bool first = true;
      for (size_t k = 0; k < iters_.size() && first; ++k) {
        if (iters_[k].is_reduce) first = values_[k] == iters_[k].min.eval(frame);
      }
      if (first) init_->exec(frame);
    }
    // Step 5.
    body_->exec(frame);
    // Step 6.
    for (auto it = allocations_.rbegin(); it != allocations_.rend(); ++it) (*it)->exit(frame);
  }

 private:
  [[noreturn]] void raise_outside_domain(size_t k, int64_t min, int64_t extent) const {
    user_error(ErrorKind::kIndex) << "tir.interpret: block " << name_ << ": iterator "
                                  << iters_[k].var->name << " is bound to " << values_[k]
                                  << ", outside its domain [" << min << ", " << min + extent << ")";
  }

  std::string name_;
  ExprCodePtr predicate_;  // null: always true
  std::vector<BlockIter> iters_;
  std::vector<std::unique_ptr<AllocationCode>> allocations_;
  StmtCodePtr init_;  // may be null
  StmtCodePtr body_;
  std::vector<int64_t> values_;
};

StmtCodePtr compile_block(Compiler& compiler, const Block& block, const BlockRealize* realize) {
  user_check(!compiler.in_grid() || !compiler.is_syncing(&block))
      << "tir.interpret: block " << block.name
      << " contains a storage_sync; barriers are inserted after blocks are lowered "
         "(insert_barriers), and the interpreter runs them only outside blocks";
  if (realize == nullptr) {
    user_check(block.iter_vars.empty())
        << "tir.interpret: block " << block.name << " has " << block.iter_vars.size()
        << " iterators but no BlockRealize binds them";
  } else {
    user_check(realize->iter_values.size() == block.iter_vars.size())
        << "tir.interpret: block " << block.name << " has " << block.iter_vars.size()
        << " iterators but its BlockRealize binds " << realize->iter_values.size();
  }
  // The predicate, the bound values and the domains are expressions of the enclosing scope.
  ExprCodePtr predicate;
  if (realize != nullptr && realize->predicate.defined() && !is_const_int(realize->predicate, 1)) {
    predicate = compiler.expr(realize->predicate);
  }
  std::vector<BlockIter> iters;
  for (size_t k = 0; k < block.iter_vars.size(); ++k) {
    const IterVar& iv = block.iter_vars[k];
    BlockIter iter;
    iter.var = iv.var.get();
    iter.value = compiler.expr(realize->iter_values[k]);
    iter.value_slot = iter.value->var_slot();
    iter.min = compile_int(compiler, iv.dom.min);
    iter.extent = compile_int(compiler, iv.dom.extent);
    iter.is_reduce = iv.type == IterType::kCommReduce;
    iters.push_back(std::move(iter));
  }
  // The iterators and the allocated buffers are in scope for init and body.
  std::vector<std::unique_ptr<ScopedVar>> scoped;
  for (BlockIter& iter : iters) {
    scoped.push_back(std::make_unique<ScopedVar>(compiler, iter.var));
    iter.slot = scoped.back()->slot();
  }
  std::vector<std::unique_ptr<AllocationCode>> allocations;
  for (const Ref<Buffer>& buffer : block.alloc_buffers) {
    allocations.push_back(std::make_unique<AllocationCode>(compiler, buffer));
  }
  StmtCodePtr init = block.init.defined() ? compiler.stmt(block.init) : nullptr;
  StmtCodePtr body = compiler.stmt(block.body);
  for (auto it = allocations.rbegin(); it != allocations.rend(); ++it) (*it)->end_scope(compiler);
  return std::make_unique<BlockCode>(block.name, std::move(predicate), std::move(iters),
                                     std::move(allocations), std::move(init), std::move(body));
}

void check_scalar_condition(const Expr& condition, const char* node) {
  type_check(condition->dtype.is_scalar() &&
             (condition->dtype.is_bool() || condition->dtype.is_integer()))
      << "tir.interpret: the condition of " << node << " must be a scalar bool, found "
      << to_script(condition) << " of dtype " << condition->dtype;
}

}  // namespace

StmtCodePtr Compiler::compile_device_allocation(const LetStmt& op) {
  const auto* call = op.value.as<Call>();
  if (call == nullptr || call->op != Builtin::DeviceAlloc) return nullptr;
  // The body ends with its device_free.
  // The buffer is the one the accesses name, in the body or in the kernels it launches.
  Ref<Buffer> buffer;
  auto find = [&](const Node* node) {
    const Buffer* b = nullptr;
    if (node->kind() == NodeKind::BufferLoad)
      b = static_cast<const BufferLoad*>(node)->buffer.get();
    if (node->kind() == NodeKind::BufferStore)
      b = static_cast<const BufferStore*>(node)->buffer.get();
    if (b != nullptr && b->data.get() == op.var.get() && !buffer.defined()) buffer = Ref<Buffer>(b);
  };
  post_order_visit(op.body, find);
  for (const auto& [name, kernel] : kernels) post_order_visit(kernel->body, find);
  const auto* seq = op.body.as<SeqStmt>();
  const auto* last = seq != nullptr && !seq->seq.empty() ? seq->seq.back().as<Evaluate>() : nullptr;
  const auto* release = last != nullptr ? last->value.as<Call>() : nullptr;
  user_check(buffer.defined() && release != nullptr && release->op == Builtin::DeviceFree)
      << "tir.interpret: device_alloc of " << op.var->name
      << " must bind the data of a buffer that the body uses and then frees with device_free";
  std::vector<Stmt> inner(seq->seq.begin(), seq->seq.end() - 1);
  auto allocation = std::make_unique<AllocationCode>(*this, buffer);
  StmtCodePtr body = stmt(make<SeqStmt>(std::move(inner)));
  allocation->end_scope(*this);
  return std::make_unique<AllocateCode>(std::move(allocation), std::move(body), -1);
}

StmtCodePtr Compiler::stmt(const Stmt& s) {
  if (!s.defined()) return std::make_unique<NoOpCode>();
  // Inside a GPU grid, where a statement keeps its resume point when it contains a barrier.
  auto state = [&](int count) { return in_grid() && is_syncing(s.get()) ? new_states(count) : -1; };
  switch (s->kind()) {
    case NodeKind::LetStmt: {
      const auto* op = static_cast<const LetStmt*>(s.get());
      // Device memory between the kernels of a GPU function (split_host_device): memory of the
      // interpreter like any allocation.
      if (StmtCodePtr device = compile_device_allocation(*op)) return device;
      user_check(!op->var->dtype.is_handle())
          << "tir.interpret: let " << op->var->name
          << " binds a handle, which the interpreter does not model";
      ExprCodePtr value = expr(op->value);
      ScopedVar var(*this, op->var.get());
      return std::make_unique<LetStmtCode>(var.slot(), std::move(value), stmt(op->body), state(1));
    }
    case NodeKind::AssertStmt: {
      const auto* op = static_cast<const AssertStmt*>(s.get());
      check_scalar_condition(op->condition, "an AssertStmt");
      return std::make_unique<AssertCode>(expr(op->condition), op->message, stmt(op->body),
                                          state(1));
    }
    case NodeKind::BufferStore:
      return compile_store(*this, *static_cast<const BufferStore*>(s.get()));
    case NodeKind::Allocate: {
      const auto* op = static_cast<const Allocate*>(s.get());
      auto allocation = std::make_unique<AllocationCode>(*this, op->buffer);
      StmtCodePtr body = stmt(op->body);
      allocation->end_scope(*this);
      return std::make_unique<AllocateCode>(std::move(allocation), std::move(body), state(1));
    }
    case NodeKind::For: {
      // Parallel, vectorized, unrolled and thread-bound loops all run as serial loops, except
      // thread-bound loops with GPU semantics: those run as grids of thread blocks.
      const auto* op = static_cast<const For*>(s.get());
      type_check(op->loop_var->dtype.is_scalar() && op->loop_var->dtype.is_integer())
          << "tir.interpret: loop variable " << op->loop_var->name << " has dtype "
          << op->loop_var->dtype << "; expected a scalar integer";
      if (op->kind == ForKind::kThreadBinding && in_grid()) return compile_thread_loop(*this, *op);
      if (op->kind == ForKind::kThreadBinding && gpu) return compile_grid(*this, *op);
      ExprCodePtr min = expr(op->min);
      ExprCodePtr extent = expr(op->extent);
      ScopedVar var(*this, op->loop_var.get());
      int first_state = state(ForCode::kStates);
      return std::make_unique<ForCode>(var.slot(), std::move(min), std::move(extent),
                                       stmt(op->body), first_state);
    }
    case NodeKind::SeqStmt: {
      std::vector<StmtCodePtr> seq;
      for (const Stmt& inner : static_cast<const SeqStmt*>(s.get())->seq)
        seq.push_back(stmt(inner));
      return std::make_unique<SeqCode>(std::move(seq), state(1));
    }
    case NodeKind::IfThenElse: {
      const auto* op = static_cast<const IfThenElse*>(s.get());
      if (op->condition->dtype.lanes() > 1) {
        // A store of only the lanes where the condition holds (vectorize_loops).
        const auto* store = op->then_case.as<BufferStore>();
        type_check(store != nullptr && !op->else_case.defined())
            << "tir.interpret: an if statement with the vector condition "
            << to_script(op->condition) << " must hold one store and no else, found "
            << to_script(s);
        return compile_masked_store(*this, *store, op->condition);
      }
      check_scalar_condition(op->condition, "an IfThenElse");
      ExprCodePtr condition = expr(op->condition);
      // A barrier under the condition is named with it.
      bool named = in_grid() && is_syncing(s.get());
      if (named) conditions.push_back(to_script(op->condition));
      StmtCodePtr then_case = stmt(op->then_case);
      if (named) conditions.back() = "not " + conditions.back();
      StmtCodePtr else_case = op->else_case.defined() ? stmt(op->else_case) : nullptr;
      if (named) conditions.pop_back();
      return std::make_unique<IfCode>(std::move(condition), std::move(then_case),
                                      std::move(else_case), state(1));
    }
    case NodeKind::Evaluate: {
      const auto* op = static_cast<const Evaluate*>(s.get());
      if (op->value.is<IntImm>()) return std::make_unique<NoOpCode>();
      if (const auto* call = op->value.as<Call>()) {
        if (call->op == Builtin::DeviceLaunch) return compile_device_launch(*this, *call);
        if (call->op == Builtin::StorageSync && (gpu || in_grid()))
          return compile_barrier(*this, *call);
        // The interpreter's asynchronous copies are done when they are made (ptx_cp_async).
        if (call->op == Builtin::PtxCpAsyncCommitGroup || call->op == Builtin::PtxCpAsyncWaitGroup)
          return std::make_unique<NoOpCode>();
      }
      return std::make_unique<EvaluateCode>(expr(op->value));
    }
    case NodeKind::Block:
      return compile_block(*this, *static_cast<const Block*>(s.get()), nullptr);
    case NodeKind::BlockRealize: {
      const auto* op = static_cast<const BlockRealize*>(s.get());
      return compile_block(*this, *op->block, op);
    }
    default:
      break;
  }
  internal_error << "tir.interpret: " << kind_name(s->kind()) << " is not a statement";
}

}  // namespace kiln::interpreter
