// Statements and memory: loads and stores (scalar, contiguous vector, gather/scatter), stack and
// workspace allocations, serial loops, conditionals, asserts and the error return.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "codegen_llvm_impl.h"
#include "kiln/codegen/codegen_llvm.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/ir/printer.h"
#include "kiln/support/error.h"
#include "kiln/tir/nontemporal.h"
#include "kiln/tir/unroll_loops.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// kDLCPU of DLPack: the device of the workspaces the CPU code allocates.
constexpr int32_t kDeviceCPU = 1;
// The alignment of KilnBackendAllocWorkspace's results.
constexpr int kWorkspaceAlignment = 64;
// A factor every value of an expression is known to be a multiple of (capped: "any").
constexpr int64_t kAnyFactor = int64_t{1} << 20;

int64_t known_factor(const Expr& e) {
  if (const int64_t* c = as_const_int(e)) return *c == 0 ? kAnyFactor : (*c < 0 ? -*c : *c);
  switch (e->kind()) {
    case NodeKind::Add:
    case NodeKind::Sub: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      return std::gcd(known_factor(op->a), known_factor(op->b));
    }
    case NodeKind::Mul: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      return std::min(known_factor(op->a) * known_factor(op->b), kAnyFactor);
    }
    case NodeKind::Cast:
      return known_factor(static_cast<const Cast*>(e.get())->value);
    default:
      return 1;
  }
}

const Buffer* single_index_buffer(const char* what, const Ref<Buffer>& buffer,
                                  const std::vector<Expr>& indices, const std::string& symbol) {
  user_check(indices.size() == 1)
      << "codegen: " << what << " of buffer " << buffer->name << " in function " << symbol
      << " has " << indices.size()
      << " indices; the input must be flattened to one index per access";
  return buffer.get();
}

}  // namespace

llvm::Value* CodeGenLLVM::element_address(const Buffer& buffer, llvm::Value* index,
                                          DataType index_dtype) {
  llvm::Value* base = lookup_var(buffer.data.get());
  if (index_dtype.is_uint()) {
    llvm::Type* i64 = builder_.getInt64Ty();
    index = builder_.CreateZExt(index, index_dtype.lanes() > 1
                                           ? llvm::FixedVectorType::get(i64, index_dtype.lanes())
                                           : i64);
  }
  return builder_.CreateInBoundsGEP(storage_type(buffer.dtype), base, index);
}

void CodeGenLLVM::assume_alignment(llvm::Value* pointer, int64_t alignment,
                                   const DataType& element) {
  if (alignment <= element.bytes()) return;
  builder_.CreateAlignmentAssumption(module_->getDataLayout(), pointer,
                                     static_cast<uint64_t>(alignment));
}

llvm::Align CodeGenLLVM::access_alignment(const Buffer& buffer, const Expr& index) {
  int64_t element = buffer.dtype.bytes();
  int64_t factor = 1;
  if (index->dtype.lanes() == 1) {
    factor = known_factor(index);
  } else if (const auto* ramp = index.as<Ramp>()) {
    factor = known_factor(ramp->base);
  }
  int64_t declared = buffer.alignment();
  if (std::find(streamed_.begin(), streamed_.end(), buffer.data.get()) != streamed_.end()) {
    declared = std::max<int64_t>(declared, tir::kStreamingAlignment);  // checked at the loop
  }
  int64_t bytes =
      std::gcd(std::max<int64_t>(declared, element), std::min(factor, kAnyFactor) * element);
  int64_t align = 1;
  while (bytes % (align * 2) == 0 && align * 2 <= bytes) align *= 2;
  return llvm::Align(static_cast<uint64_t>(align));
}

void CodeGenLLVM::add_alias_info(llvm::Instruction* inst, const Buffer& buffer) {
  auto it = alias_info_.find(buffer.data.get());
  if (it == alias_info_.end()) return;
  inst->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second.scope);
  inst->setMetadata(llvm::LLVMContext::MD_noalias, it->second.others);
}

llvm::Value* CodeGenLLVM::visit(const BufferLoad* op) {
  return emit_load(op, nullptr, nullptr);
}

llvm::Value* CodeGenLLVM::emit_load(const BufferLoad* op, llvm::Value* mask,
                                    llvm::Value* passthru) {
  const Buffer& buffer = *single_index_buffer("BufferLoad", op->buffer, op->indices, symbol_);
  const Expr& index = op->indices[0];
  llvm::Type* element = storage_type(buffer.dtype);
  int lanes = op->dtype.lanes();
  auto* type = llvm::FixedVectorType::get(element, lanes);
  // A passthru of another type than the memory's (a boolean) is selected after the load.
  llvm::Value* select_after = nullptr;
  if (passthru != nullptr && passthru->getType() != type) std::swap(select_after, passthru);
  const auto* ramp = index.as<Ramp>();
  llvm::Instruction* load;
  if (lanes == 1) {
    llvm::Value* address = element_address(buffer, emit_index(index), index->dtype);
    load = builder_.CreateAlignedLoad(element, address, access_alignment(buffer, index));
  } else if (ramp != nullptr && is_const_int(ramp->stride, 1)) {
    llvm::Value* address = element_address(buffer, emit_index(ramp->base), ramp->base->dtype);
    llvm::Align align = access_alignment(buffer, index);
    if (mask == nullptr) {
      load = builder_.CreateAlignedLoad(type, address, align);
    } else {
      load = builder_.CreateMaskedLoad(type, address, align, mask, passthru);
    }
  } else {
    llvm::Value* addresses = element_address(buffer, emit_index(index), index->dtype);
    load = builder_.CreateMaskedGather(type, addresses, llvm::Align(buffer.dtype.bytes()), mask,
                                       passthru);
  }
  note_vector(op->dtype);
  add_alias_info(load, buffer);
  llvm::Value* value = load;
  if (buffer.dtype.is_bool()) {
    value = builder_.CreateICmpNE(load, llvm::Constant::getNullValue(load->getType()));
  }
  if (select_after != nullptr) value = builder_.CreateSelect(mask, value, select_after);
  return value;
}

void CodeGenLLVM::emit_store(const BufferStore* op, llvm::Value* mask) {
  const Buffer& buffer = *single_index_buffer("BufferStore", op->buffer, op->indices, symbol_);
  const Expr& index = op->indices[0];
  llvm::Value* value = emit(op->value);
  if (buffer.dtype.is_bool()) value = builder_.CreateZExt(value, storage_type(op->value->dtype));
  int lanes = op->value->dtype.lanes();
  const auto* ramp = index.as<Ramp>();
  llvm::Instruction* store;
  if (lanes == 1) {
    llvm::Value* address = element_address(buffer, emit_index(index), index->dtype);
    store = builder_.CreateAlignedStore(value, address, access_alignment(buffer, index));
  } else if (ramp != nullptr && is_const_int(ramp->stride, 1)) {
    llvm::Value* address = element_address(buffer, emit_index(ramp->base), ramp->base->dtype);
    llvm::Align align = access_alignment(buffer, index);
    if (mask == nullptr) {
      store = builder_.CreateAlignedStore(value, address, align);
    } else {
      store = builder_.CreateMaskedStore(value, address, align, mask);
    }
  } else {
    llvm::Value* addresses = element_address(buffer, emit_index(index), index->dtype);
    store = builder_.CreateMaskedScatter(value, addresses, llvm::Align(buffer.dtype.bytes()), mask);
  }
  add_alias_info(store, buffer);
  if (mask == nullptr && !streamed_.empty() && tir::is_streaming_store(*op, streamed_)) {
    store->setMetadata(
        llvm::LLVMContext::MD_nontemporal,
        llvm::MDNode::get(context_, {llvm::ConstantAsMetadata::get(builder_.getInt32(1))}));
    fn_.unfenced_streams = true;
  }
}

void CodeGenLLVM::emit_error_return(const std::string& message) {
  if (!message.empty()) {
    llvm::FunctionCallee set_error = runtime_function(
        "KilnSetLastError",
        llvm::FunctionType::get(builder_.getVoidTy(), {builder_.getPtrTy()}, false));
    builder_.CreateCall(set_error, {string_constant(message)});
  }
  for (auto it = fn_.workspaces.rbegin(); it != fn_.workspaces.rend(); ++it) {
    emit_free_workspace(*it);
  }
  builder_.CreateRet(builder_.getInt32(-1));
}

llvm::Value* CodeGenLLVM::emit_free_workspace(llvm::Value* pointer) {
  llvm::Type* i32 = builder_.getInt32Ty();
  llvm::FunctionCallee free_workspace =
      runtime_function("KilnBackendFreeWorkspace",
                       llvm::FunctionType::get(i32, {i32, i32, builder_.getPtrTy()}, false));
  return builder_.CreateCall(free_workspace,
                             {builder_.getInt32(kDeviceCPU), builder_.getInt32(0), pointer});
}

// Branches to a new block that returns -1 (after `message`, when given) unless `ok` holds, and
// continues after the check.
void CodeGenLLVM::emit_check(llvm::Value* ok, const std::string& message) {
  auto* fail = llvm::BasicBlock::Create(context_, "check_fail", fn_.function);
  auto* pass = llvm::BasicBlock::Create(context_, "check_pass", fn_.function);
  builder_.CreateCondBr(ok, pass, fail, md_.createBranchWeights(1 << 20, 1));
  builder_.SetInsertPoint(fail);
  emit_error_return(message);
  builder_.SetInsertPoint(pass);
}

void CodeGenLLVM::emit_allocate(const Allocate* op) {
  const Buffer& buffer = *op->buffer;
  user_check(!is_shared_scope(buffer.scope))
      << "codegen: buffer " << buffer.name << " of function " << symbol_
      << " is allocated in GPU shared memory (scope \"" << buffer.scope
      << "\"), which the CPU backend does not have; use scope \"global\" or \"local\", or build "
         "for a GPU target";
  user_check(buffer.scope == "global" || buffer.scope == "local")
      << "codegen: buffer " << buffer.name << " of function " << symbol_ << " has scope \""
      << buffer.scope << "\"; the CPU backend allocates scopes \"global\" and \"local\"";
  llvm::Type* element = storage_type(buffer.dtype);
  int64_t element_bytes = buffer.dtype.bytes();
  int64_t constant_count = 1;
  bool is_constant = true;
  for (const Expr& extent : buffer.shape) {
    const int64_t* c = as_const_int(extent);
    if (c == nullptr) {
      is_constant = false;
    } else {
      constant_count *= *c;
    }
  }
  llvm::Align align(static_cast<uint64_t>(std::max(buffer.data_alignment, 64)));
  llvm::Value* data;
  bool on_stack = is_constant && constant_count * element_bytes <= kMaxStackAllocBytes;
  if (on_stack) {
    // An array type rather than a count: SROA splits only the former (a register tile then
    // becomes SSA values before LICM, which would otherwise promote each of its vectors).
    auto* array =
        llvm::ArrayType::get(element, static_cast<uint64_t>(std::max<int64_t>(constant_count, 1)));
    data = entry_alloca(array, nullptr, align, buffer.name);
  } else {
    user_check(buffer.data_alignment <= kWorkspaceAlignment)
        << "codegen: buffer " << buffer.name << " of function " << symbol_ << " asks for "
        << buffer.data_alignment << "-byte alignment, but workspaces are " << kWorkspaceAlignment
        << "-byte aligned";
    align = llvm::Align(kWorkspaceAlignment);
    llvm::Type* i64 = builder_.getInt64Ty();
    llvm::Value* nbytes = builder_.getInt64(static_cast<uint64_t>(element_bytes));
    for (const Expr& extent : buffer.shape) {
      nbytes =
          builder_.CreateMul(nbytes, cast_value(emit(extent), extent->dtype, DataType::int64()));
    }
    llvm::Type* i32 = builder_.getInt32Ty();
    llvm::FunctionCallee alloc_workspace = runtime_function(
        "KilnBackendAllocWorkspace",
        llvm::FunctionType::get(builder_.getPtrTy(), {i32, i32, i64, i32, i32}, false));
    llvm::CallInst* call =
        builder_.CreateCall(alloc_workspace, {builder_.getInt32(kDeviceCPU), builder_.getInt32(0),
                                              nbytes, builder_.getInt32(buffer.dtype.code()),
                                              builder_.getInt32(buffer.dtype.bits())});
    // The result's alignment as an attribute of the call, which LLVM reads where it needs it
    // (an llvm.assume would cost a pass over every use of the pointer).
    call->addRetAttr(llvm::Attribute::getWithAlignment(context_, align));
    data = call;
    data->setName(buffer.name);
    // The runtime sets the message when it cannot allocate.
    emit_check(builder_.CreateIsNotNull(data), "");
    fn_.workspaces.push_back(data);
  }
  llvm::Value* previous = bind_var(buffer.data.get(), data);
  emit_stmt(op->body);
  restore_var(buffer.data.get(), previous);
  if (!on_stack) {
    fn_.workspaces.pop_back();
    llvm::Value* status = emit_free_workspace(data);
    emit_check(builder_.CreateICmpEQ(status, builder_.getInt32(0)), "");
  }
}

void CodeGenLLVM::emit_serial_loop(const Var* var, llvm::Value* begin, llvm::Value* end,
                                   const Stmt& body, LoopUnroll unroll) {
  llvm::BasicBlock* preheader = builder_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(context_, "for_" + var->name, fn_.function);
  auto* loop_body = llvm::BasicBlock::Create(context_, "for_body_" + var->name, fn_.function);
  auto* exit = llvm::BasicBlock::Create(context_, "for_end_" + var->name, fn_.function);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode* index = builder_.CreatePHI(begin->getType(), 2, var->name);
  index->addIncoming(begin, preheader);
  llvm::Value* in_range = var->dtype.is_uint() ? builder_.CreateICmpULT(index, end)
                                               : builder_.CreateICmpSLT(index, end);
  builder_.CreateCondBr(in_range, loop_body, exit);

  builder_.SetInsertPoint(loop_body);
  llvm::Value* previous = bind_var(var, index);
  emit_stmt(body);
  restore_var(var, previous);
  // The loop variable stays below `end`, so its increment cannot wrap.
  llvm::Value* next = var->dtype.is_uint()
                          ? builder_.CreateNUWAdd(index, builder_.getIntN(var->dtype.bits(), 1))
                          : builder_.CreateNSWAdd(index, builder_.getIntN(var->dtype.bits(), 1));
  llvm::BranchInst* back_edge = builder_.CreateBr(header);
  index->addIncoming(next, builder_.GetInsertBlock());

  std::vector<llvm::Metadata*> properties = {nullptr};
  properties.push_back(
      llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.mustprogress")}));
  if (unroll != LoopUnroll::kLlvmDecides) {
    const char* what =
        unroll == LoopUnroll::kFull ? "llvm.loop.unroll.full" : "llvm.loop.unroll.disable";
    properties.push_back(llvm::MDNode::get(context_, {llvm::MDString::get(context_, what)}));
  }
  if (unroll == LoopUnroll::kNever) {
    properties.push_back(
        llvm::MDNode::get(context_, {llvm::MDString::get(context_, "llvm.loop.vectorize.enable"),
                                     llvm::ConstantAsMetadata::get(builder_.getFalse())}));
  }
  llvm::MDNode* loop_id = llvm::MDNode::getDistinct(context_, properties);
  loop_id->replaceOperandWith(0, loop_id);
  back_edge->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  builder_.SetInsertPoint(exit);
}

void CodeGenLLVM::emit_for(const For* op) {
  user_check(op->kind != ForKind::kThreadBinding)
      << "codegen: loop " << op->loop_var->name << " of function " << symbol_
      << " is bound to the GPU thread index " << op->thread_tag
      << "; the CPU backend cannot compile thread bindings: build for a GPU target or leave the "
         "loop unbound";
  if (streamed_.empty() && streaming_point_ == nullptr && emit_streaming(op)) return;
  emit_loop(op);
}

bool CodeGenLLVM::emit_streaming(const For* op) {
  // A pointer bound inside the loop is none the function received.
  std::vector<const Var*> streamed = tir::streamed_buffers(*op, [this](const Var* data) {
    return allocated_.count(data) != 0 || fn_.vars.count(data) == 0;
  });
  if (streamed.empty()) return false;
  const StmtNode* point = tir::streaming_point(*op, streamed);
  if (point == op) {
    emit_streaming_versions(streamed, [&] { emit_loop(op); });
    return true;
  }
  // The versions are made where emit_stmt meets the point.
  streaming_point_ = point;
  point_streamed_ = std::move(streamed);
  emit_loop(op);
  streaming_point_ = nullptr;
  point_streamed_.clear();
  return true;
}

void CodeGenLLVM::emit_streaming_versions(const std::vector<const Var*>& streamed,
                                          const std::function<void()>& emit_code) {
  llvm::Type* address_type = module_->getDataLayout().getIntPtrType(context_);
  llvm::Value* aligned = builder_.getTrue();
  for (const Var* data : streamed) {
    llvm::Value* address = builder_.CreatePtrToInt(lookup_var(data), address_type);
    llvm::Value* offset = builder_.CreateAnd(
        address, llvm::ConstantInt::get(address_type, tir::kStreamingAlignment - 1));
    aligned = builder_.CreateAnd(
        aligned, builder_.CreateICmpEQ(offset, llvm::ConstantInt::get(address_type, 0)));
  }
  auto* stream = llvm::BasicBlock::Create(context_, "streaming", fn_.function);
  auto* plain = llvm::BasicBlock::Create(context_, "not_streaming", fn_.function);
  auto* done = llvm::BasicBlock::Create(context_, "streaming_end", fn_.function);
  builder_.CreateCondBr(aligned, stream, plain);
  builder_.SetInsertPoint(stream);
  streamed_ = streamed;
  emit_code();
  streamed_.clear();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(plain);
  emit_code();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
}

void CodeGenLLVM::fence_streams() {
  if (!fn_.unfenced_streams) return;
  builder_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
  fn_.unfenced_streams = false;
}

void CodeGenLLVM::emit_loop(const For* op) {
  if (op->kind == ForKind::kParallel) {
    emit_parallel_for(op);
    return;
  }
  DataType index = op->loop_var->dtype;
  llvm::Value* begin = cast_value(emit(op->min), op->min->dtype, index);
  llvm::Value* extent = cast_value(emit(op->extent), op->extent->dtype, index);
  llvm::Value* end = builder_.CreateAdd(begin, extent);
  LoopUnroll unroll = LoopUnroll::kLlvmDecides;
  if (op->kind == ForKind::kUnrolled) {
    unroll = LoopUnroll::kFull;
  } else if (op->annotations.count(tir::kLlvmLoopFixedAnnotation) != 0) {
    unroll = LoopUnroll::kNever;
  }
  emit_serial_loop(op->loop_var.get(), begin, end, op->body, unroll);
}

void CodeGenLLVM::emit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  if (s.get() == streaming_point_) {
    streaming_point_ = nullptr;  // the copies emit the statement itself
    emit_streaming_versions(point_streamed_, [&] { emit_stmt(s); });
    return;
  }
  switch (s->kind()) {
    case NodeKind::LetStmt: {
      const auto* op = static_cast<const LetStmt*>(s.get());
      llvm::Value* value = emit(op->value);
      auto buffer = buffer_of_data_.find(op->var.get());
      if (buffer != buffer_of_data_.end() && value->getType()->isPointerTy()) {
        assume_alignment(value, buffer->second->alignment(), buffer->second->dtype);
      }
      llvm::Value* previous = bind_var(op->var.get(), value);
      emit_stmt(op->body);
      restore_var(op->var.get(), previous);
      return;
    }
    case NodeKind::AssertStmt: {
      const auto* op = static_cast<const AssertStmt*>(s.get());
      user_check(op->condition->dtype.is_scalar())
          << "codegen: an assert of function " << symbol_ << " has a vector condition";
      emit_check(emit(op->condition), op->message);
      emit_stmt(op->body);
      return;
    }
    case NodeKind::BufferStore:
      emit_store(static_cast<const BufferStore*>(s.get()));
      return;
    case NodeKind::Allocate:
      emit_allocate(static_cast<const Allocate*>(s.get()));
      return;
    case NodeKind::For:
      emit_for(static_cast<const For*>(s.get()));
      return;
    case NodeKind::SeqStmt:
      for (const Stmt& item : static_cast<const SeqStmt*>(s.get())->seq) emit_stmt(item);
      return;
    case NodeKind::IfThenElse: {
      const auto* op = static_cast<const IfThenElse*>(s.get());
      llvm::Value* condition = emit(op->condition);
      if (op->condition->dtype.lanes() > 1) {
        // A store of only the lanes where the condition holds (vectorize_loops).
        const auto* store = op->then_case.as<BufferStore>();
        user_check(store != nullptr && !op->else_case.defined() &&
                   store->value->dtype.lanes() == op->condition->dtype.lanes())
            << "codegen: an if statement of function " << symbol_ << " has the vector condition "
            << to_script(op->condition)
            << "; expected one store of as many lanes as its branch, found " << to_script(s);
        emit_store(store, condition);
        return;
      }
      auto* then_block = llvm::BasicBlock::Create(context_, "if_then", fn_.function);
      auto* end_block = llvm::BasicBlock::Create(context_, "if_end", fn_.function);
      llvm::BasicBlock* else_block = end_block;
      if (op->else_case.defined()) {
        else_block = llvm::BasicBlock::Create(context_, "if_else", fn_.function);
      }
      builder_.CreateCondBr(condition, then_block, else_block);
      builder_.SetInsertPoint(then_block);
      emit_stmt(op->then_case);
      builder_.CreateBr(end_block);
      if (op->else_case.defined()) {
        builder_.SetInsertPoint(else_block);
        emit_stmt(op->else_case);
        builder_.CreateBr(end_block);
      }
      builder_.SetInsertPoint(end_block);
      return;
    }
    case NodeKind::Evaluate: {
      const Expr& value = static_cast<const Evaluate*>(s.get())->value;
      if (!value.is<IntImm>() && !value.is<FloatImm>()) emit(value);
      return;
    }
    default:
      user_error(ErrorKind::kValue)
          << "codegen: function " << symbol_ << " still contains a " << kind_name(s->kind())
          << "; lower it first (the input must be a lowered loop program without blocks)";
  }
}

}  // namespace kiln::codegen
