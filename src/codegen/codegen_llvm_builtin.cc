// Call builtins (kiln/ir/builtin.h) to LLVM: math through LLVM intrinsics or libm, bit
// operations, the lazy if_then_else, extern and LLVM-intrinsic calls, and the access to the
// packed arguments of the entry point.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen_llvm_impl.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

// Byte offsets of DLTensor's fields (DLPack v0.6, x86-64 and AArch64 LP64 layout).
constexpr uint64_t kTensorDataOffset = 0;
constexpr uint64_t kTensorDeviceIdOffset = 12;
constexpr uint64_t kTensorShapeOffset = 24;
constexpr uint64_t kTensorByteOffsetOffset = 40;
// sizeof(KilnValue).
constexpr uint64_t kValueBytes = 8;

// The LLVM intrinsic of a math builtin, or not_intrinsic when libm provides it.
llvm::Intrinsic::ID math_intrinsic(Builtin op) {
  switch (op) {
    case Builtin::Exp:
      return llvm::Intrinsic::exp;
    case Builtin::Exp2:
      return llvm::Intrinsic::exp2;
    case Builtin::Log:
      return llvm::Intrinsic::log;
    case Builtin::Log2:
      return llvm::Intrinsic::log2;
    case Builtin::Sqrt:
      return llvm::Intrinsic::sqrt;
    case Builtin::Sin:
      return llvm::Intrinsic::sin;
    case Builtin::Cos:
      return llvm::Intrinsic::cos;
    case Builtin::Floor:
      return llvm::Intrinsic::floor;
    case Builtin::Ceil:
      return llvm::Intrinsic::ceil;
    case Builtin::Trunc:
      return llvm::Intrinsic::trunc;
    case Builtin::Round:
      return llvm::Intrinsic::roundeven;
    case Builtin::Abs:
      return llvm::Intrinsic::fabs;
    case Builtin::Pow:
      return llvm::Intrinsic::pow;
    default:
      return llvm::Intrinsic::not_intrinsic;
  }
}

// The libm function of a math builtin that has no LLVM intrinsic ("tanh"; "tanhf" for float).
const char* libm_name(Builtin op) {
  switch (op) {
    case Builtin::Log1p:
      return "log1p";
    case Builtin::Tan:
      return "tan";
    case Builtin::Tanh:
      return "tanh";
    case Builtin::Erf:
      return "erf";
    default:
      return nullptr;
  }
}

bool is_float_math(Builtin op) {
  return math_intrinsic(op) != llvm::Intrinsic::not_intrinsic || libm_name(op) != nullptr ||
         op == Builtin::Rsqrt || op == Builtin::Sigmoid;
}

// `value` as the bfloat vector `want` of the same width. A splat of a wider scalar becomes a
// splat of that scalar's bfloat pieces: LLVM 16's vector-combine pass crashes on a bitcast of
// a splat shuffle to bfloat elements.
llvm::Value* bitcast_to_bfloat(llvm::IRBuilder<>& builder, llvm::Value* value, llvm::Type* want) {
  auto* shuffle = llvm::dyn_cast<llvm::ShuffleVectorInst>(value);
  auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(want);
  if (shuffle != nullptr && vector != nullptr && shuffle->isZeroEltSplat()) {
    auto* insert = llvm::dyn_cast<llvm::InsertElementInst>(shuffle->getOperand(0));
    auto* index = insert ? llvm::dyn_cast<llvm::ConstantInt>(insert->getOperand(2)) : nullptr;
    if (index != nullptr && index->isZero()) {
      llvm::Value* scalar = insert->getOperand(1);
      unsigned pieces = scalar->getType()->getPrimitiveSizeInBits() / 16;
      if (pieces > 0 && vector->getNumElements() % pieces == 0) {
        llvm::Value* part = builder.CreateBitCast(
            scalar, llvm::FixedVectorType::get(vector->getElementType(), pieces));
        llvm::SmallVector<int, 64> mask;
        for (unsigned k = 0; k < vector->getNumElements(); ++k) mask.push_back(k % pieces);
        return builder.CreateShuffleVector(part, mask);
      }
    }
  }
  return builder.CreateBitCast(value, want);
}

}  // namespace

llvm::Value* CodeGenLLVM::emit_libm_call(const char* name, llvm::Value* x, DataType dtype) {
  llvm::Type* scalar = value_type(dtype.element_of());
  std::string symbol = std::string(name) + (dtype.bits() == 32 ? "f" : "");
  llvm::FunctionCallee callee =
      runtime_function(symbol.c_str(), llvm::FunctionType::get(scalar, {scalar}, false));
  if (dtype.lanes() == 1) return builder_.CreateCall(callee, {x});
  // libm has no vector entry points: call it lane by lane.
  llvm::Value* result = llvm::PoisonValue::get(x->getType());
  for (int i = 0; i < dtype.lanes(); ++i) {
    llvm::Value* lane = builder_.CreateExtractElement(x, static_cast<uint64_t>(i));
    result = builder_.CreateInsertElement(result, builder_.CreateCall(callee, {lane}),
                                          static_cast<uint64_t>(i));
  }
  return result;
}

llvm::Value* CodeGenLLVM::emit_float_math(const Call* op) {
  DataType t = op->args[0]->dtype;
  DataType c = compute_dtype(t);
  llvm::Value* x = widen_float(emit(op->args[0]), t);
  if (op->op == Builtin::IsNan) return builder_.CreateFCmpUNO(x, x);
  llvm::Value* result;
  llvm::Intrinsic::ID id = math_intrinsic(op->op);
  if (op->op == Builtin::Pow) {
    llvm::Value* y = widen_float(emit(op->args[1]), op->args[1]->dtype);
    result = builder_.CreateBinaryIntrinsic(id, x, y);
  } else if (id != llvm::Intrinsic::not_intrinsic) {
    result = builder_.CreateUnaryIntrinsic(id, x);
  } else if (const char* name = libm_name(op->op)) {
    result = emit_libm_call(name, x, c);
  } else if (op->op == Builtin::Rsqrt) {
    llvm::Value* root = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    result = builder_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), root);
  } else {
    internal_check(op->op == Builtin::Sigmoid)
        << "codegen: no float lowering of " << builtin_name(op->op);
    llvm::Value* e = builder_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, builder_.CreateFNeg(x));
    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
    result = builder_.CreateFDiv(one, builder_.CreateFAdd(one, e));
  }
  return narrow_float(result, t);
}

llvm::Value* CodeGenLLVM::emit_if_then_else(const Call* op) {
  llvm::Value* condition = emit(op->args[0]);
  if (op->args[0]->dtype.lanes() > 1) return emit_lanewise_if_then_else(op, condition);
  if (is_cheap_and_safe(op->args[1]) && is_cheap_and_safe(op->args[2])) {
    llvm::Value* t = emit(op->args[1]);
    llvm::Value* f = emit(op->args[2]);
    return builder_.CreateSelect(condition, t, f);
  }
  // Only the chosen arm runs: it may hold a load that is out of bounds otherwise.
  llvm::Function* function = fn_.function;
  auto* then_block = llvm::BasicBlock::Create(context_, "if_then", function);
  auto* else_block = llvm::BasicBlock::Create(context_, "if_else", function);
  auto* end_block = llvm::BasicBlock::Create(context_, "if_end", function);
  builder_.CreateCondBr(condition, then_block, else_block);
  builder_.SetInsertPoint(then_block);
  llvm::Value* t = emit(op->args[1]);
  llvm::BasicBlock* then_exit = builder_.GetInsertBlock();
  builder_.CreateBr(end_block);
  builder_.SetInsertPoint(else_block);
  llvm::Value* f = emit(op->args[2]);
  llvm::BasicBlock* else_exit = builder_.GetInsertBlock();
  builder_.CreateBr(end_block);
  builder_.SetInsertPoint(end_block);
  llvm::PHINode* phi = builder_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_exit);
  phi->addIncoming(f, else_exit);
  return phi;
}

llvm::Value* CodeGenLLVM::emit_lanewise_if_then_else(const Call* op, llvm::Value* condition) {
  int lanes = op->args[0]->dtype.lanes();
  auto vector_load = [&](const Expr& arm) {
    const auto* load = arm.as<BufferLoad>();
    return load != nullptr && load->dtype.lanes() == lanes ? load : nullptr;
  };
  auto on_every_lane = [&](const Expr& arm) {
    llvm::Value* value = emit(arm);
    return arm->dtype.lanes() == 1 ? builder_.CreateVectorSplat(lanes, value) : value;
  };
  const BufferLoad* t_load = vector_load(op->args[1]);
  const BufferLoad* f_load = vector_load(op->args[2]);
  llvm::Value* negated = f_load != nullptr ? builder_.CreateNot(condition) : nullptr;
  if (t_load != nullptr && f_load == nullptr) {
    return emit_load(t_load, condition, on_every_lane(op->args[2]));
  }
  if (f_load != nullptr && t_load == nullptr) {
    return emit_load(f_load, negated, on_every_lane(op->args[1]));
  }
  llvm::Value* t =
      t_load != nullptr ? emit_load(t_load, condition, nullptr) : on_every_lane(op->args[1]);
  llvm::Value* f =
      f_load != nullptr ? emit_load(f_load, negated, nullptr) : on_every_lane(op->args[2]);
  return builder_.CreateSelect(condition, t, f);
}

llvm::Value* CodeGenLLVM::emit_extern_call(const Call* op) {
  const auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
  user_check(name != nullptr) << "codegen: " << builtin_name(op->op)
                              << " expects the function name (a string) as its first argument, "
                                 "in function "
                              << symbol_;
  std::vector<llvm::Value*> args;
  std::vector<llvm::Type*> types;
  for (size_t i = 1; i < op->args.size(); ++i) {
    args.push_back(emit(op->args[i]));
    types.push_back(args.back()->getType());
  }
  llvm::Type* result = value_type(op->dtype);
  if (op->op == Builtin::CallLLVMPureIntrin) {
    llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(name->value);
    user_check(id != llvm::Intrinsic::not_intrinsic)
        << "call_llvm_pure_intrin: '" << name->value << "' is not an LLVM intrinsic (function "
        << symbol_ << ")";
    // kiln stores bfloat16 as i16, so where a fixed-signature intrinsic takes or returns LLVM
    // bfloat values, a value of the same width is bitcast to or from them.
    llvm::Type* declared_result = nullptr;
    if (!llvm::Intrinsic::isOverloaded(id)) {
      llvm::FunctionType* declared = llvm::Intrinsic::getType(context_, id);
      if (declared->getNumParams() == args.size()) {
        for (size_t i = 0; i < args.size(); ++i) {
          llvm::Type* want = declared->getParamType(i);
          if (want != types[i] && want->getScalarType()->isBFloatTy() &&
              want->getPrimitiveSizeInBits() == types[i]->getPrimitiveSizeInBits()) {
            args[i] = bitcast_to_bfloat(builder_, args[i], want);
            types[i] = want;
          }
        }
        if (declared->getReturnType() != result &&
            declared->getReturnType()->getScalarType()->isBFloatTy() &&
            declared->getReturnType()->getPrimitiveSizeInBits() ==
                result->getPrimitiveSizeInBits()) {
          declared_result = result;
          result = declared->getReturnType();
        }
      }
    }
    llvm::FunctionType* type = llvm::FunctionType::get(result, types, false);
    llvm::SmallVector<llvm::Intrinsic::IITDescriptor, 8> table;
    llvm::Intrinsic::getIntrinsicInfoTableEntries(id, table);
    llvm::ArrayRef<llvm::Intrinsic::IITDescriptor> rest = table;
    llvm::SmallVector<llvm::Type*, 4> overloads;
    bool matches = llvm::Intrinsic::matchIntrinsicSignature(type, rest, overloads) ==
                       llvm::Intrinsic::MatchIntrinsicTypes_Match &&
                   !llvm::Intrinsic::matchIntrinsicVarArg(false, rest);
    if (!matches) {
      std::string found;
      llvm::raw_string_ostream stream(found);
      type->print(stream);
      user_error(ErrorKind::kType)
          << "call_llvm_pure_intrin: the result and argument types " << stream.str()
          << " do not match the signature of " << name->value << " (function " << symbol_ << ")";
    }
    llvm::Function* intrinsic = llvm::Intrinsic::getDeclaration(module_.get(), id, overloads);
    llvm::Value* value = builder_.CreateCall(intrinsic, args);
    return declared_result != nullptr ? builder_.CreateBitCast(value, declared_result) : value;
  }
  llvm::FunctionCallee callee =
      module_->getOrInsertFunction(name->value, llvm::FunctionType::get(result, types, false));
  return builder_.CreateCall(callee, args);
}

llvm::Value* CodeGenLLVM::emit_packed_arg(const Call* op) {
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::Value* index = builder_.CreateSExt(emit(op->args[0]), i64);
  llvm::Value* slot = builder_.CreateGEP(builder_.getInt8Ty(), fn_.packed_args,
                                         builder_.CreateMul(index, builder_.getInt64(kValueBytes)));
  llvm::Value* result = nullptr;
  DataType natural;
  switch (op->op) {
    case Builtin::PackedArgInt:
      result = builder_.CreateLoad(i64, slot);
      natural = DataType::int64();
      break;
    case Builtin::PackedArgFloat:
      result = builder_.CreateLoad(builder_.getDoubleTy(), slot);
      natural = DataType::float64();
      break;
    case Builtin::PackedArgDeviceId: {
      llvm::Value* tensor = builder_.CreateLoad(ptr, slot);
      result = builder_.CreateLoad(
          builder_.getInt32Ty(),
          builder_.CreateConstGEP1_64(builder_.getInt8Ty(), tensor, kTensorDeviceIdOffset));
      natural = DataType::int32();
      break;
    }
    case Builtin::PackedArgData: {
      llvm::Value* tensor = builder_.CreateLoad(ptr, slot);
      llvm::Value* data = builder_.CreateLoad(
          ptr, builder_.CreateConstGEP1_64(builder_.getInt8Ty(), tensor, kTensorDataOffset));
      llvm::Value* offset = builder_.CreateLoad(
          i64, builder_.CreateConstGEP1_64(builder_.getInt8Ty(), tensor, kTensorByteOffsetOffset));
      // data + byte_offset is formed on integers: scalar evolution then sees one opaque base
      // per tensor instead of a sum of two unknowns, which makes loop strength reduction (the
      // costliest pass on small kernels) several times cheaper. The code is the same.
      return builder_.CreateIntToPtr(builder_.CreateAdd(builder_.CreatePtrToInt(data, i64), offset),
                                     ptr);
    }
    default: {
      llvm::Value* tensor = builder_.CreateLoad(ptr, slot);
      llvm::Value* shape = builder_.CreateLoad(
          ptr, builder_.CreateConstGEP1_64(builder_.getInt8Ty(), tensor, kTensorShapeOffset));
      llvm::Value* k = builder_.CreateSExt(emit(op->args[1]), i64);
      result = builder_.CreateLoad(i64, builder_.CreateGEP(i64, shape, k));
      natural = DataType::int64();
      break;
    }
  }
  return cast_value(result, natural, op->dtype);
}

llvm::Value* CodeGenLLVM::emit_builtin(const Call* op) {
  const std::vector<Expr>& args = op->args;
  DataType t = args.empty() ? op->dtype : args[0]->dtype;
  if (op->op == Builtin::Abs && !t.is_float()) {
    return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, emit(args[0]), builder_.getFalse());
  }
  if (is_float_math(op->op) || op->op == Builtin::IsNan) return emit_float_math(op);
  switch (op->op) {
    case Builtin::ShiftLeft: {
      llvm::Value* a = emit(args[0]);
      return builder_.CreateShl(a, emit(args[1]));
    }
    case Builtin::ShiftRight: {
      llvm::Value* a = emit(args[0]);
      llvm::Value* b = emit(args[1]);
      return t.is_int() ? builder_.CreateAShr(a, b) : builder_.CreateLShr(a, b);
    }
    case Builtin::BitwiseAnd: {
      llvm::Value* a = emit(args[0]);
      return builder_.CreateAnd(a, emit(args[1]));
    }
    case Builtin::BitwiseOr: {
      llvm::Value* a = emit(args[0]);
      return builder_.CreateOr(a, emit(args[1]));
    }
    case Builtin::BitwiseXor: {
      llvm::Value* a = emit(args[0]);
      return builder_.CreateXor(a, emit(args[1]));
    }
    case Builtin::BitwiseNot:
      return builder_.CreateNot(emit(args[0]));
    case Builtin::Popcount:
      return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, emit(args[0]));
    case Builtin::IfThenElse:
      return emit_if_then_else(op);
    case Builtin::Likely: {
      llvm::Value* condition = emit(args[0]);
      if (t.lanes() > 1) return condition;
      return builder_.CreateIntrinsic(llvm::Intrinsic::expect, {condition->getType()},
                                      {condition, builder_.getTrue()});
    }
    case Builtin::Reinterpret: {
      llvm::Value* value = emit(args[0]);
      llvm::Type* to = value_type(op->dtype);
      if (value->getType()->isPointerTy() && !to->isPointerTy()) {
        return builder_.CreatePtrToInt(value, to);
      }
      if (to->isPointerTy() && !value->getType()->isPointerTy()) {
        return builder_.CreateIntToPtr(value, to);
      }
      return builder_.CreateBitCast(value, to);
    }
    case Builtin::AddressOf: {
      const auto* load = args[0].as<BufferLoad>();
      user_check(load != nullptr && load->indices.size() == 1 && load->dtype.lanes() == 1)
          << "codegen: address_of expects a scalar load of a flattened buffer, in function "
          << symbol_;
      return element_address(*load->buffer, emit_index(load->indices[0]), load->indices[0]->dtype);
    }
    case Builtin::CallExtern:
    case Builtin::CallPureExtern:
    case Builtin::CallLLVMPureIntrin:
      return emit_extern_call(op);
    case Builtin::StorageSync:
      user_error(ErrorKind::kValue)
          << "codegen: function " << symbol_
          << " synchronizes GPU threads (storage_sync), which the CPU backend cannot compile; "
             "build it for a GPU target";
    case Builtin::PtxMma:
    case Builtin::PtxLdmatrix:
    case Builtin::PtxCpAsync:
    case Builtin::PtxCpAsyncCommitGroup:
    case Builtin::PtxCpAsyncWaitGroup:
      user_error(ErrorKind::kValue)
          << "codegen: function " << symbol_ << " uses " << builtin_name(op->op)
          << ", an instruction of CUDA GPUs, which the CPU backend cannot compile; build it for "
             "a CUDA target";
    case Builtin::PackedArgData:
    case Builtin::PackedArgDeviceId:
    case Builtin::PackedArgShape:
    case Builtin::PackedArgInt:
    case Builtin::PackedArgFloat:
      return emit_packed_arg(op);
    case Builtin::DeviceLaunch:
      return emit_device_launch(op);
    case Builtin::DeviceAlloc:
    case Builtin::DeviceFree:
      return emit_device_memory(op);
    default:
      internal_error << "codegen: no lowering of builtin " << builtin_name(op->op);
  }
}

}  // namespace kiln::codegen
