// Expressions to LLVM values, with the semantics of kiln/ir/expr.h: wrapping integers, floor
// division, fmin/fmax, float16/bfloat16 computed in float32, vectors as LLVM vectors.
#include <llvm/ADT/APFloat.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen_llvm_impl.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::codegen {

using namespace ir;

namespace {

bool is_power_of_two(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

int log2_of(int64_t v) {
  int n = 0;
  while ((int64_t{1} << n) < v) ++n;
  return n;
}

}  // namespace

DataType CodeGenLLVM::compute_dtype(DataType dtype) {
  if (dtype.is_float16() || dtype.is_bfloat16())
    return DataType::float32().with_lanes(dtype.lanes());
  return dtype;
}

llvm::Value* CodeGenLLVM::widen_float(llvm::Value* value, DataType dtype) {
  if (dtype.is_float16()) return builder_.CreateFPExt(value, value_type(compute_dtype(dtype)));
  if (!dtype.is_bfloat16()) return value;
  // bfloat16 is the upper half of a float32.
  llvm::Value* bits = builder_.CreateZExt(value, value_type(DataType::uint(32, dtype.lanes())));
  bits = builder_.CreateShl(bits, 16);
  return builder_.CreateBitCast(bits, value_type(compute_dtype(dtype)));
}

llvm::Value* CodeGenLLVM::narrow_float(llvm::Value* value, DataType dtype) {
  if (dtype.is_float16()) return builder_.CreateFPTrunc(value, value_type(dtype));
  if (!dtype.is_bfloat16()) return value;
  // Round to nearest even on the bits: add 0x7fff plus the lowest kept bit, keep the upper half.
  // A NaN keeps its sign and upper payload, with the quiet bit set so that it stays a NaN.
  llvm::Type* i32 = value_type(DataType::uint(32, dtype.lanes()));
  llvm::Type* i16 = value_type(dtype);
  llvm::Value* bits = builder_.CreateBitCast(value, i32);
  llvm::Value* upper = builder_.CreateLShr(bits, 16);
  llvm::Value* lsb = builder_.CreateAnd(upper, llvm::ConstantInt::get(i32, 1));
  llvm::Value* rounded = builder_.CreateAdd(bits, llvm::ConstantInt::get(i32, 0x7fff));
  rounded = builder_.CreateAdd(rounded, lsb);
  rounded = builder_.CreateTrunc(builder_.CreateLShr(rounded, 16), i16);
  llvm::Value* quiet_nan =
      builder_.CreateTrunc(builder_.CreateOr(upper, llvm::ConstantInt::get(i32, 0x40)), i16);
  llvm::Value* is_nan = builder_.CreateFCmpUNO(value, value);
  return builder_.CreateSelect(is_nan, quiet_nan, rounded);
}

llvm::Value* CodeGenLLVM::cast_value(llvm::Value* value, DataType from, DataType to) {
  if (from == to) return value;
  internal_check(from.lanes() == to.lanes())
      << "codegen: a conversion from " << from << " to " << to << " changes the lane count";
  if (from.is_handle() && to.is_handle()) return value;
  if (from.is_handle()) return builder_.CreatePtrToInt(value, value_type(to));
  if (to.is_handle()) return builder_.CreateIntToPtr(value, value_type(to));
  if (to.is_bool()) {
    if (from.is_float()) {
      llvm::Value* wide = widen_float(value, from);
      return builder_.CreateFCmpUNE(wide, llvm::Constant::getNullValue(wide->getType()));
    }
    return builder_.CreateICmpNE(value, llvm::Constant::getNullValue(value->getType()));
  }
  if (from.is_bool()) {
    if (to.is_float()) {
      DataType c = compute_dtype(to);
      return narrow_float(builder_.CreateUIToFP(value, value_type(c)), to);
    }
    return builder_.CreateZExt(value, value_type(to));
  }
  if (from.is_integer() && to.is_integer()) {
    return builder_.CreateIntCast(value, value_type(to), from.is_int());
  }
  if (from.is_integer() && to.is_float()) {
    DataType c = to.is_bfloat16() ? compute_dtype(to) : to;
    llvm::Value* f = from.is_int() ? builder_.CreateSIToFP(value, value_type(c))
                                   : builder_.CreateUIToFP(value, value_type(c));
    return narrow_float(f, to);
  }
  if (from.is_float() && to.is_integer()) {
    llvm::Value* f = from.is_bfloat16() ? widen_float(value, from) : value;
    return to.is_int() ? builder_.CreateFPToSI(f, value_type(to))
                       : builder_.CreateFPToUI(f, value_type(to));
  }
  internal_check(from.is_float() && to.is_float())
      << "codegen: no conversion from " << from << " to " << to;
  if (from.is_bfloat16() || to.is_bfloat16()) {
    DataType f32 = DataType::float32().with_lanes(to.lanes());
    llvm::Value* wide =
        from.is_bfloat16() ? widen_float(value, from) : cast_value(value, from, f32);
    return to.is_bfloat16() ? narrow_float(wide, to) : cast_value(wide, f32, to);
  }
  if (from.bits() < to.bits()) return builder_.CreateFPExt(value, value_type(to));
  return builder_.CreateFPTrunc(value, value_type(to));
}

bool CodeGenLLVM::is_cheap_and_safe(const Expr& e) {
  bool ok = true;
  post_order_visit(e, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::BufferLoad:
        ok = false;
        break;
      case NodeKind::Div:
      case NodeKind::Mod:
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod: {
        const auto* op = static_cast<const BinaryNode*>(node);
        const int64_t* divisor = as_const_int(op->b);
        if (!op->dtype.is_float() && (divisor == nullptr || *divisor == 0)) ok = false;
        break;
      }
      case NodeKind::Call: {
        switch (static_cast<const Call*>(node)->op) {
          case Builtin::Abs:
          case Builtin::Floor:
          case Builtin::Ceil:
          case Builtin::Trunc:
          case Builtin::Round:
          case Builtin::IsNan:
          case Builtin::BitwiseAnd:
          case Builtin::BitwiseOr:
          case Builtin::BitwiseXor:
          case Builtin::BitwiseNot:
          case Builtin::Likely:
          case Builtin::Reinterpret:
            break;
          default:
            ok = false;
        }
        break;
      }
      default:
        break;
    }
  });
  return ok;
}

llvm::Value* CodeGenLLVM::visit(const IntImm* op) {
  return llvm::ConstantInt::get(value_type(op->dtype), static_cast<uint64_t>(op->value),
                                op->dtype.is_int());
}

llvm::Value* CodeGenLLVM::visit(const FloatImm* op) {
  if (op->dtype.is_bfloat16()) {
    llvm::APFloat value(op->value);
    bool lost = false;
    value.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return llvm::ConstantInt::get(value_type(op->dtype), value.bitcastToAPInt());
  }
  return llvm::ConstantFP::get(value_type(op->dtype), op->value);
}

llvm::Value* CodeGenLLVM::visit(const StringImm* op) {
  return string_constant(op->value);
}

llvm::Value* CodeGenLLVM::visit(const Var* op) {
  return lookup_var(op);
}

template <class F>
llvm::Value* CodeGenLLVM::float_binary(DataType dtype, llvm::Value* a, llvm::Value* b, F op) {
  if (!dtype.is_float16() && !dtype.is_bfloat16()) return op(a, b);
  return narrow_float(op(widen_float(a, dtype), widen_float(b, dtype)), dtype);
}

llvm::Value* CodeGenLLVM::emit_index(const Expr& index) {
  // Arithmetic on loaded values or call results is data arithmetic, which wraps: an index
  // that computes with them (a gather through an index table) keeps plain arithmetic.
  bool index_only = true;
  post_order_visit(index, [&](const Node* node) {
    index_only &= node->kind() != NodeKind::BufferLoad && node->kind() != NodeKind::Call;
  });
  bool outer = in_index_;
  in_index_ = index_only;
  llvm::Value* value =
      index_only && widens_index(index->dtype) ? emit_wide_index(index) : emit(index);
  in_index_ = outer;
  return value;
}

bool CodeGenLLVM::widens_index(DataType dtype) const {
  return dtype.is_int() && dtype.lanes() == 1 && dtype.bits() < 64 &&
         module_->getDataLayout().getPointerSizeInBits() == 64;
}

llvm::Value* CodeGenLLVM::emit_wide_index(const Expr& e) {
  llvm::Type* i64 = builder_.getInt64Ty();
  switch (e->kind()) {
    case NodeKind::IntImm:
      return llvm::ConstantInt::get(i64, static_cast<uint64_t>(e.as<IntImm>()->value), true);
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul: {
      // The value fits the narrower type (nsw there), so the wide operation cannot wrap either.
      const auto* op = static_cast<const BinaryNode*>(e.get());
      llvm::Value* a = emit_wide_index(op->a);
      llvm::Value* b = emit_wide_index(op->b);
      if (e->kind() == NodeKind::Add) return builder_.CreateAdd(a, b, "", false, true);
      if (e->kind() == NodeKind::Sub) return builder_.CreateSub(a, b, "", false, true);
      return builder_.CreateMul(a, b, "", false, true);
    }
    default:
      // Variables, divisions, minima and the rest: their value, sign-extended.
      return builder_.CreateSExt(emit(e), i64);
  }
}

llvm::Value* CodeGenLLVM::visit(const Add* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (!op->dtype.is_float()) return builder_.CreateAdd(a, b, "", false, signed_index(op->dtype));
  return float_binary(op->dtype, a, b,
                      [&](llvm::Value* x, llvm::Value* y) { return builder_.CreateFAdd(x, y); });
}

llvm::Value* CodeGenLLVM::visit(const Sub* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (!op->dtype.is_float()) return builder_.CreateSub(a, b, "", false, signed_index(op->dtype));
  return float_binary(op->dtype, a, b,
                      [&](llvm::Value* x, llvm::Value* y) { return builder_.CreateFSub(x, y); });
}

llvm::Value* CodeGenLLVM::visit(const Mul* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (!op->dtype.is_float()) return builder_.CreateMul(a, b, "", false, signed_index(op->dtype));
  return float_binary(op->dtype, a, b,
                      [&](llvm::Value* x, llvm::Value* y) { return builder_.CreateFMul(x, y); });
}

llvm::Value* CodeGenLLVM::visit(const Div* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b,
                        [&](llvm::Value* x, llvm::Value* y) { return builder_.CreateFDiv(x, y); });
  }
  return op->dtype.is_uint() || op->dtype.is_bool() ? builder_.CreateUDiv(a, b)
                                                    : builder_.CreateSDiv(a, b);
}

llvm::Value* CodeGenLLVM::visit(const Mod* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b,
                        [&](llvm::Value* x, llvm::Value* y) { return builder_.CreateFRem(x, y); });
  }
  return op->dtype.is_uint() || op->dtype.is_bool() ? builder_.CreateURem(a, b)
                                                    : builder_.CreateSRem(a, b);
}

llvm::Value* CodeGenLLVM::visit(const FloorDiv* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b, [&](llvm::Value* x, llvm::Value* y) {
      return builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(x, y));
    });
  }
  if (op->dtype.is_uint() || op->dtype.is_bool()) return builder_.CreateUDiv(a, b);
  const int64_t* divisor = as_const_int(op->b);
  if (divisor != nullptr && *divisor > 0) {
    // An arithmetic shift rounds toward negative infinity already.
    if (is_power_of_two(*divisor)) return builder_.CreateAShr(a, log2_of(*divisor));
    llvm::Value* q = builder_.CreateSDiv(a, b);
    llvm::Value* r = builder_.CreateSRem(a, b);
    llvm::Value* negative = builder_.CreateICmpSLT(r, llvm::Constant::getNullValue(r->getType()));
    return builder_.CreateAdd(q, builder_.CreateSExt(negative, q->getType()));
  }
  // Truncated quotient, minus one when the remainder is nonzero and its sign differs from b's.
  llvm::Value* q = builder_.CreateSDiv(a, b);
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(r->getType());
  llvm::Value* signs_differ = builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero);
  llvm::Value* adjust = builder_.CreateAnd(builder_.CreateICmpNE(r, zero), signs_differ);
  return builder_.CreateAdd(q, builder_.CreateSExt(adjust, q->getType()));
}

llvm::Value* CodeGenLLVM::visit(const FloorMod* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b, [&](llvm::Value* x, llvm::Value* y) {
      llvm::Value* q =
          builder_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, builder_.CreateFDiv(x, y));
      return builder_.CreateFSub(x, builder_.CreateFMul(q, y));
    });
  }
  if (op->dtype.is_uint() || op->dtype.is_bool()) return builder_.CreateURem(a, b);
  const int64_t* divisor = as_const_int(op->b);
  if (divisor != nullptr && is_power_of_two(*divisor)) {
    return builder_.CreateAnd(a, llvm::ConstantInt::get(a->getType(), *divisor - 1));
  }
  llvm::Value* r = builder_.CreateSRem(a, b);
  llvm::Value* zero = llvm::Constant::getNullValue(r->getType());
  llvm::Value* adjust;
  if (divisor != nullptr && *divisor > 0) {
    adjust = builder_.CreateICmpSLT(r, zero);
  } else {
    llvm::Value* signs_differ = builder_.CreateICmpSLT(builder_.CreateXor(r, b), zero);
    adjust = builder_.CreateAnd(builder_.CreateICmpNE(r, zero), signs_differ);
  }
  return builder_.CreateSelect(adjust, builder_.CreateAdd(r, b), r);
}

llvm::Value* CodeGenLLVM::visit(const Min* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b, [&](llvm::Value* x, llvm::Value* y) {
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y);
    });
  }
  bool is_signed = op->dtype.is_int();
  return builder_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                        a, b);
}

llvm::Value* CodeGenLLVM::visit(const Max* op) {
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (op->dtype.is_float()) {
    return float_binary(op->dtype, a, b, [&](llvm::Value* x, llvm::Value* y) {
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y);
    });
  }
  bool is_signed = op->dtype.is_int();
  return builder_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax,
                                        a, b);
}

// Float comparisons are ordered (false with a NaN) except !=, which is true with a NaN, as in C.
llvm::Value* CodeGenLLVM::compare(const BinaryNode* op, Predicates p) {
  DataType t = op->a->dtype;
  llvm::Value* a = emit(op->a);
  llvm::Value* b = emit(op->b);
  if (t.is_float()) return builder_.CreateFCmp(p.f, widen_float(a, t), widen_float(b, t));
  return builder_.CreateICmp(t.is_int() ? p.is : p.iu, a, b);
}

llvm::Value* CodeGenLLVM::visit(const EQ* op) {
  return compare(op, {llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::FCMP_OEQ});
}
llvm::Value* CodeGenLLVM::visit(const NE* op) {
  return compare(op, {llvm::CmpInst::ICMP_NE, llvm::CmpInst::ICMP_NE, llvm::CmpInst::FCMP_UNE});
}
llvm::Value* CodeGenLLVM::visit(const LT* op) {
  return compare(op, {llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_ULT, llvm::CmpInst::FCMP_OLT});
}
llvm::Value* CodeGenLLVM::visit(const LE* op) {
  return compare(op, {llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_ULE, llvm::CmpInst::FCMP_OLE});
}
llvm::Value* CodeGenLLVM::visit(const GT* op) {
  return compare(op, {llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_UGT, llvm::CmpInst::FCMP_OGT});
}
llvm::Value* CodeGenLLVM::visit(const GE* op) {
  return compare(op, {llvm::CmpInst::ICMP_SGE, llvm::CmpInst::ICMP_UGE, llvm::CmpInst::FCMP_OGE});
}

llvm::Value* CodeGenLLVM::visit(const And* op) {
  llvm::Value* a = emit(op->a);
  return builder_.CreateAnd(a, emit(op->b));
}

llvm::Value* CodeGenLLVM::visit(const Or* op) {
  llvm::Value* a = emit(op->a);
  return builder_.CreateOr(a, emit(op->b));
}

llvm::Value* CodeGenLLVM::visit(const Not* op) {
  return builder_.CreateNot(emit(op->a));
}

llvm::Value* CodeGenLLVM::visit(const Select* op) {
  llvm::Value* condition = emit(op->condition);
  llvm::Value* t = emit(op->true_value);
  llvm::Value* f = emit(op->false_value);
  return builder_.CreateSelect(condition, t, f);
}

llvm::Value* CodeGenLLVM::visit(const Cast* op) {
  return cast_value(emit(op->value), op->value->dtype, op->dtype);
}

llvm::Value* CodeGenLLVM::visit(const Call* op) {
  return emit_builtin(op);
}

llvm::Value* CodeGenLLVM::visit(const Ramp* op) {
  llvm::Value* base = emit(op->base);
  llvm::Type* vector = value_type(op->dtype);
  llvm::Value* result = builder_.CreateVectorSplat(op->lanes, base);
  std::vector<llvm::Constant*> steps;
  const int64_t* stride = as_const_int(op->stride);
  for (int i = 0; i < op->lanes; ++i) {
    steps.push_back(
        llvm::ConstantInt::get(base->getType(), static_cast<uint64_t>(stride ? *stride * i : i)));
  }
  llvm::Value* offsets = llvm::ConstantVector::get(steps);
  if (stride == nullptr) {
    llvm::Value* strides = builder_.CreateVectorSplat(op->lanes, emit(op->stride));
    offsets = builder_.CreateMul(strides, offsets);
  }
  internal_check(result->getType() == vector) << "codegen: Ramp of dtype " << op->dtype;
  return builder_.CreateAdd(result, offsets, "", false, signed_index(op->dtype));
}

llvm::Value* CodeGenLLVM::visit(const Broadcast* op) {
  value_type(op->dtype);
  return builder_.CreateVectorSplat(op->lanes, emit(op->value));
}

llvm::Value* CodeGenLLVM::visit(const Let* op) {
  llvm::Value* value = emit(op->value);
  llvm::Value* previous = bind_var(op->var.get(), value);
  llvm::Value* body = emit(op->body);
  restore_var(op->var.get(), previous);
  return body;
}

llvm::Value* CodeGenLLVM::visit(const Reduce*) {
  user_error(ErrorKind::kValue) << "codegen: function " << symbol_
                                << " still contains a Reduce expression; lower it first (the "
                                   "input must be a lowered loop program)";
}

}  // namespace kiln::codegen
