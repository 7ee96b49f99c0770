// Parallel loops: the body of a kParallel For becomes a task function of
// KilnBackendParallelLaunch that runs one chunk of the iteration range (a few chunks per pool
// thread, handed out dynamically); the values the body uses from outside travel in a closure
// struct on the caller's stack.
#include <llvm/IR/Constants.h>

#include <unordered_set>

#include "codegen_llvm_impl.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"
#include "kiln/tir/unroll_loops.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// Tasks of a parallel loop per pool thread.
constexpr int kTasksPerThread = 4;

bool contains_loop(const Stmt& body) {
  bool found = false;
  post_order_visit(body,
                   [&found](const Node* node) { found = found || node->kind() == NodeKind::For; });
  return found;
}

// Rejects a parallel loop inside another: each would launch on the same thread pool.
class ParallelNestingChecker : public IRVisitor {
 public:
  explicit ParallelNestingChecker(std::string symbol) : symbol_(std::move(symbol)) {}

 protected:
  using IRVisitor::visit;
  void visit(const For* op) override {
    if (op->kind != ForKind::kParallel) {
      IRVisitor::visit(op);
      return;
    }
    user_check(outer_ == nullptr)
        << "codegen: parallel loop " << op->loop_var->name << " of function " << symbol_
        << " is nested inside parallel loop " << outer_->loop_var->name
        << "; only one level of loops may be parallel: fuse them first (sch.fuse("
        << outer_->loop_var->name << ", " << op->loop_var->name
        << ")) and parallelize the fused loop, or make the inner loop serial";
    outer_ = op;
    IRVisitor::visit(op);
    outer_ = nullptr;
  }

 private:
  std::string symbol_;
  const For* outer_ = nullptr;
};

// The variables a statement uses but does not define, in order of first use, and whether it
// reads the packed arguments.
class FreeVarCollector : public IRVisitor {
 public:
  std::vector<const Var*> free_vars;
  bool uses_packed_args = false;

  void define(const Var* var) { defined_.insert(var); }

 protected:
  using IRVisitor::visit;
  void use(const Var* var) {
    if (defined_.count(var) == 0 && seen_.insert(var).second) free_vars.push_back(var);
  }
  void visit(const Var* op) override { use(op); }
  void visit(const BufferLoad* op) override {
    use(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    use(op->buffer->data.get());
    IRVisitor::visit(op);
  }
  void visit(const Let* op) override {
    visit_expr(op->value);
    define(op->var.get());
    visit_expr(op->body);
  }
  void visit(const LetStmt* op) override {
    visit_expr(op->value);
    define(op->var.get());
    visit_stmt(op->body);
  }
  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    define(op->loop_var.get());
    visit_stmt(op->body);
  }
  void visit(const Allocate* op) override {
    visit_buffer(op->buffer.get());
    define(op->buffer->data.get());
    visit_stmt(op->body);
  }
  void visit(const Call* op) override {
    switch (op->op) {
      case Builtin::PackedArgData:
      case Builtin::PackedArgDeviceId:
      case Builtin::PackedArgShape:
      case Builtin::PackedArgInt:
      case Builtin::PackedArgFloat:
        uses_packed_args = true;
        break;
      default:
        break;
    }
    IRVisitor::visit(op);
  }

 private:
  std::unordered_set<const Var*> defined_;
  std::unordered_set<const Var*> seen_;
};

}  // namespace

void CodeGenLLVM::check_parallel_nesting(const PrimFunc& func) {
  ParallelNestingChecker checker(symbol_);
  checker.visit_stmt(func.body);
}

void CodeGenLLVM::emit_parallel_for(const For* op) {
  // Step 1. The closure: begin, extent, the packed arguments if used, then the free variables.
  FreeVarCollector collector;
  collector.define(op->loop_var.get());
  collector.visit_stmt(op->body);
  DataType index = op->loop_var->dtype;
  llvm::Value* begin = cast_value(emit(op->min), op->min->dtype, index);
  llvm::Value* extent = cast_value(emit(op->extent), op->extent->dtype, index);
  std::vector<llvm::Value*> values = {begin, extent};
  if (collector.uses_packed_args) values.push_back(fn_.packed_args);
  for (const Var* var : collector.free_vars) values.push_back(lookup_var(var));
  std::vector<llvm::Type*> fields;
  for (llvm::Value* v : values) fields.push_back(v->getType());
  llvm::StructType* closure_type = llvm::StructType::get(context_, fields);
  llvm::AllocaInst* closure =
      entry_alloca(closure_type, nullptr, llvm::Align(8), "parallel_closure");
  for (size_t i = 0; i < values.size(); ++i) {
    builder_.CreateStore(values[i],
                         builder_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(i)));
  }

  // Step 2. The task function: unpack the closure and run one chunk of the loop.
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::FunctionType* task_type = llvm::FunctionType::get(i32, {i32, i32, ptr}, false);
  llvm::Function* task =
      llvm::Function::Create(task_type, llvm::Function::InternalLinkage,
                             symbol_ + "_parallel_" + std::to_string(num_tasks_++), module_.get());
  set_function_attributes(task);
  FunctionState parent = std::move(fn_);
  llvm::BasicBlock* parent_block = builder_.GetInsertBlock();
  fn_ = FunctionState();
  fn_.function = task;
  fn_.entry = llvm::BasicBlock::Create(context_, "entry", task);
  builder_.SetInsertPoint(fn_.entry);
  llvm::Value* task_closure = task->getArg(2);
  std::vector<llvm::Value*> unpacked;
  for (size_t i = 0; i < values.size(); ++i) {
    unpacked.push_back(builder_.CreateLoad(
        fields[i], builder_.CreateStructGEP(closure_type, task_closure, static_cast<unsigned>(i))));
  }
  size_t next = 2;
  if (collector.uses_packed_args) fn_.packed_args = unpacked[next++];
  for (const Var* var : collector.free_vars) {
    llvm::Value* value = unpacked[next++];
    auto buffer = buffer_of_data_.find(var);
    if (buffer != buffer_of_data_.end() && value->getType()->isPointerTy()) {
      assume_alignment(value, buffer->second->alignment(), buffer->second->dtype);
    }
    bind_var(var, value);
  }
  // Chunk t of n covers [begin + t * chunk, min(begin + (t + 1) * chunk, begin + extent)).
  llvm::Type* index_type = begin->getType();
  bool is_signed = !op->loop_var->dtype.is_uint();
  llvm::Value* task_begin = unpacked[0];
  llvm::Value* task_extent = unpacked[1];
  llvm::Value* task_id = builder_.CreateIntCast(task->getArg(0), index_type, true);
  llvm::Value* num_tasks = builder_.CreateIntCast(task->getArg(1), index_type, true);
  llvm::Value* one = llvm::ConstantInt::get(index_type, 1);
  llvm::Value* chunk = builder_.CreateSDiv(
      builder_.CreateSub(builder_.CreateAdd(task_extent, num_tasks), one), num_tasks);
  llvm::Value* chunk_begin =
      builder_.CreateAdd(task_begin, builder_.CreateMul(task_id, chunk), "chunk_begin");
  llvm::Value* range_end = builder_.CreateAdd(task_begin, task_extent);
  llvm::Value* chunk_end = builder_.CreateBinaryIntrinsic(
      is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
      builder_.CreateAdd(chunk_begin, chunk), range_end, nullptr, "chunk_end");
  // A fixed parallel loop (the tuner's) over loops stays as it is; one over straight-line code
  // stays LLVM's to vectorize, as the loop a schedule left scalar under the threads.
  bool fixed = op->annotations.count(tir::kLlvmLoopFixedAnnotation) != 0 && contains_loop(op->body);
  emit_serial_loop(op->loop_var.get(), chunk_begin, chunk_end, op->body,
                   fixed ? LoopUnroll::kNever : LoopUnroll::kLlvmDecides);
  // Streaming stores of this chunk reach memory before the pool sees the task done.
  fence_streams();
  builder_.CreateRet(builder_.getInt32(0));
  finish_function();

  // Step 3. Back in the caller: launch the tasks, propagate a failure. There are up to
  // kTasksPerThread tasks per pool thread (never more than iterations): the pool hands them
  // out as threads come free, so a thread the OS interrupts, or chunks that take longer than
  // others, do not hold the others idle at the end, as one chunk per thread would.
  fn_ = std::move(parent);
  builder_.SetInsertPoint(parent_block);
  // The tasks may read what this thread streamed before.
  fence_streams();
  llvm::FunctionCallee threads_fn =
      runtime_function("KilnGetNumThreads", llvm::FunctionType::get(i32, {}, false));
  llvm::Value* threads = builder_.CreateCall(threads_fn, {});
  llvm::Value* per_thread = builder_.CreateMul(threads, builder_.getInt32(kTasksPerThread));
  llvm::Value* extent32 = builder_.CreateIntCast(
      builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, extent,
                                     llvm::ConstantInt::get(extent->getType(), 1 << 20)),
      i32, true);
  llvm::Value* tasks = builder_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax,
      builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, per_thread, extent32),
      builder_.getInt32(1));
  llvm::FunctionCallee launch = runtime_function(
      "KilnBackendParallelLaunch", llvm::FunctionType::get(i32, {ptr, ptr, i32}, false));
  llvm::Value* status = builder_.CreateCall(launch, {task, closure, tasks});
  // The runtime already holds the failing task's message.
  emit_check(builder_.CreateICmpEQ(status, builder_.getInt32(0)), "");
}

}  // namespace kiln::codegen
