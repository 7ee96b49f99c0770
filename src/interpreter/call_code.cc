// Builtin calls (kiln/ir/builtin.h): float math through <cmath> in double, rounded to the dtype;
// integer bit operations; the lazy if_then_else; likely; reinterpret. Builtins that need code
// outside the function (LLVM intrinsics, addresses, barriers) are refused when
// the function is compiled, before any memory is touched. Extern calls are in extern_code.cc.
#include <cmath>
#include <cstring>

#include "compiler.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

using UnaryMath = double (*)(double);

double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
// Ties go to the even neighbour, as numpy.round; independent of the floating-point environment.
double round_half_even(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

// The <cmath> function of a one-argument float builtin, or null.
UnaryMath unary_math(Builtin op) {
  switch (op) {
    case Builtin::Exp:
      return [](double x) { return std::exp(x); };
    case Builtin::Exp2:
      return [](double x) { return std::exp2(x); };
    case Builtin::Log:
      return [](double x) { return std::log(x); };
    case Builtin::Log2:
      return [](double x) { return std::log2(x); };
    case Builtin::Log1p:
      return [](double x) { return std::log1p(x); };
    case Builtin::Sqrt:
      return [](double x) { return std::sqrt(x); };
    case Builtin::Rsqrt:
      return &rsqrt;
    case Builtin::Sin:
      return [](double x) { return std::sin(x); };
    case Builtin::Cos:
      return [](double x) { return std::cos(x); };
    case Builtin::Tan:
      return [](double x) { return std::tan(x); };
    case Builtin::Tanh:
      return [](double x) { return std::tanh(x); };
    case Builtin::Sigmoid:
      return &sigmoid;
    case Builtin::Erf:
      return [](double x) { return std::erf(x); };
    case Builtin::Floor:
      return [](double x) { return std::floor(x); };
    case Builtin::Ceil:
      return [](double x) { return std::ceil(x); };
    case Builtin::Round:
      return &round_half_even;
    case Builtin::Trunc:
      return [](double x) { return std::trunc(x); };
    default:
      return nullptr;
  }
}

class UnaryMathCode final : public ResultCode {
 public:
  UnaryMathCode(DataType dtype, UnaryMath fn, ExprCodePtr a)
      : ResultCode(dtype), fn_(fn), kind_(num_kind(dtype)), a_(std::move(a)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i].f = round_result(kind_, fn_(a[i].f));
    return out;
  }

 private:
  UnaryMath fn_;
  NumKind kind_;
  ExprCodePtr a_;
};

class PowCode final : public ResultCode {
 public:
  PowCode(DataType dtype, ExprCodePtr a, ExprCodePtr b)
      : ResultCode(dtype), kind_(num_kind(dtype)), a_(std::move(a)), b_(std::move(b)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    const Lane* b = b_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i].f = round_result(kind_, std::pow(a[i].f, b[i].f));
    return out;
  }

 private:
  NumKind kind_;
  ExprCodePtr a_, b_;
};

class IsNanCode final : public ResultCode {
 public:
  IsNanCode(DataType dtype, ExprCodePtr a) : ResultCode(dtype), a_(std::move(a)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i].i = std::isnan(a[i].f);
    return out;
  }

 private:
  ExprCodePtr a_;
};

// abs of a signed integer wraps: abs(INT_MIN) is INT_MIN, as two's complement hardware gives.
class AbsCode final : public ResultCode {
 public:
  AbsCode(DataType dtype, ExprCodePtr a)
      : ResultCode(dtype), kind_(num_kind(dtype)), bits_(dtype.bits()), a_(std::move(a)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      if (is_float_kind(kind_)) {
        out[i].f = std::fabs(a[i].f);
      } else if (kind_ == NumKind::kInt && a[i].i < 0) {
        out[i].i =
            wrap_signed(static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a[i].i)), bits_);
      } else {
        out[i] = a[i];
      }
    }
    return out;
  }

 private:
  NumKind kind_;
  int bits_;
  ExprCodePtr a_;
};

// Bitwise operations on canonical integers. And/or/xor of two sign- (zero-) extended values is
// sign- (zero-) extended already; the other results are wrapped to the width.
class BitCode final : public ResultCode {
 public:
  BitCode(DataType dtype, Builtin op, std::vector<ExprCodePtr> args, std::string text)
      : ResultCode(dtype),
        op_(op),
        is_signed_(dtype.is_int()),
        bits_(dtype.bits()),
        args_(std::move(args)),
        text_(std::move(text)) {}

  const Lane* eval(Frame& frame) override {
    const Lane* a = args_[0]->eval(frame);
    const Lane* b = args_.size() > 1 ? args_[1]->eval(frame) : nullptr;
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i].i = wrap(apply(a[i].i, b != nullptr ? b[i].i : 0));
    return out;
  }

 private:
  int64_t wrap(int64_t v) const {
    return is_signed_ ? wrap_signed(v, bits_) : wrap_unsigned(v, bits_);
  }

  int64_t apply(int64_t a, int64_t b) const {
    uint64_t ua = static_cast<uint64_t>(a);
    switch (op_) {
      case Builtin::ShiftLeft:
        check_shift(b);
        return static_cast<int64_t>(ua << b);
      case Builtin::ShiftRight:
        check_shift(b);
        return is_signed_ ? a >> b : static_cast<int64_t>(ua >> b);
      case Builtin::BitwiseAnd:
        return a & b;
      case Builtin::BitwiseOr:
        return a | b;
      case Builtin::BitwiseXor:
        return a ^ b;
      case Builtin::BitwiseNot:
        return ~a;
      case Builtin::Popcount: {
        uint64_t bits = static_cast<uint64_t>(wrap_unsigned(a, bits_));
        int64_t count = 0;
        for (; bits != 0; bits &= bits - 1) ++count;
        return count;
      }
      default:
        internal_error << "tir.interpret: " << builtin_name(op_) << " is not a bit operation";
    }
  }

  // A shift by a negative amount or by the width or more is undefined (kiln/ir/builtin.h).
  void check_shift(int64_t amount) const {
    bool negative = is_signed_ && amount < 0;
    if (!negative && static_cast<uint64_t>(amount) < static_cast<uint64_t>(bits_)) return;
    user_error(ErrorKind::kRuntime)
        << "tir.interpret: shift amount "
        << (is_signed_ ? std::to_string(amount) : std::to_string(static_cast<uint64_t>(amount)))
        << " is outside [0, " << bits_ << ") in " << text_;
  }

  Builtin op_;
  bool is_signed_;
  int bits_;
  std::vector<ExprCodePtr> args_;
  std::string text_;
};

// Evaluates the condition, then only the arm it picks: the other may load out of bounds.
class IfThenElseCode final : public ExprCode {
 public:
  IfThenElseCode(DataType dtype, ExprCodePtr c, ExprCodePtr t, ExprCodePtr f)
      : ExprCode(dtype), c_(std::move(c)), t_(std::move(t)), f_(std::move(f)) {}
  const Lane* eval(Frame& frame) override {
    return c_->eval(frame)[0].i != 0 ? t_->eval(frame) : f_->eval(frame);
  }

 private:
  ExprCodePtr c_, t_, f_;
};

// if_then_else with a condition that varies across lanes: each arm on every lane, but an arm
// that is a load of the condition's lanes loads only on the lanes that pick it.
class LanewiseIfThenElseCode final : public ResultCode {
 public:
  LanewiseIfThenElseCode(Compiler& compiler, const Call& call) : ResultCode(call.dtype) {
    int lanes = call.args[0]->dtype.lanes();
    type_check(call.dtype.lanes() == lanes)
        << "tir.interpret: " << to_script(Expr(&call)) << " has dtype " << call.dtype
        << ", but its condition has " << lanes << " lanes";
    c_ = compiler.expr(call.args[0]);
    masks_[0].resize(lanes);
    masks_[1].resize(lanes);
    for (int arm = 0; arm < 2; ++arm) {
      const auto* load = call.args[arm + 1].as<BufferLoad>();
      arms_[arm] = load != nullptr && load->dtype.lanes() == lanes
                       ? compile_masked_load(compiler, *load, &masks_[arm])
                       : compiler.expr(call.args[arm + 1]);
    }
  }
  const Lane* eval(Frame& frame) override {
    const Lane* c = c_->eval(frame);
    for (int i = 0; i < lanes(); ++i) {
      masks_[0][i].i = c[i].i != 0;
      masks_[1][i].i = c[i].i == 0;
    }
    const Lane* t = arms_[0]->eval(frame);
    const Lane* f = arms_[1]->eval(frame);
    bool t_vector = arms_[0]->lanes() > 1, f_vector = arms_[1]->lanes() > 1;
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      out[i] = masks_[0][i].i != 0 ? t[t_vector ? i : 0] : f[f_vector ? i : 0];
    }
    return out;
  }

 private:
  ExprCodePtr c_;
  std::vector<Lane> masks_[2];  // where the then-arm and where the else-arm is picked
  ExprCodePtr arms_[2];
};

// The bits of the argument, written lane by lane in the memory encoding of its dtype, read back
// lane by lane as the call's dtype.
class ReinterpretCode final : public ResultCode {
 public:
  ReinterpretCode(DataType dtype, ExprCodePtr a)
      : ResultCode(dtype),
        from_(elem_kind(a->dtype())),
        to_(elem_kind(dtype)),
        from_size_(a->dtype().element_of().bytes()),
        to_size_(dtype.element_of().bytes()),
        bytes_(static_cast<size_t>(a->dtype().bytes())),
        a_(std::move(a)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    for (int i = 0; i < a_->lanes(); ++i) write_element(from_, a[i], &bytes_[i * from_size_]);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i] = read_element(to_, &bytes_[i * to_size_]);
    return out;
  }

 private:
  ElemKind from_, to_;
  int from_size_, to_size_;
  std::vector<uint8_t> bytes_;
  ExprCodePtr a_;
};

const char* unsupported_reason(Builtin op) {
  switch (op) {
    case Builtin::CallLLVMPureIntrin:
      return "the interpreter has no LLVM; interpret the function before tensorization";
    case Builtin::AddressOf:
      return "the interpreter does not model pointers";
    case Builtin::PtxMma:
      return "it is a tensor-core instruction of a whole warp, which only CUDA code runs; check "
             "the schedule with its plain-code reference (cuda.mma_f16f16f32_reference, ...) "
             "instead";
    case Builtin::PtxLdmatrix:
      return "it is a load of a whole warp, each lane receiving what others address, which only "
             "CUDA code runs; check the schedule with the plain-code loads "
             "cuda.mma_load_* instead";
    case Builtin::StorageSync:
      return "a barrier between GPU threads has a meaning only with GPU semantics (interpret "
             "with gpu=True, the default for a function that contains storage_sync), and only "
             "as a statement of its own";
    default:
      return "it belongs to compiled code only (interpret the function before lowering adds it)";
  }
}

void check_float_args(const Call& call) {
  for (const Expr& a : call.args) {
    type_check(a->dtype.is_float())
        << "tir.interpret: " << builtin_name(call.op) << " expects float arguments, found dtype "
        << a->dtype << " in " << to_script(Expr(&call));
  }
}

void check_integer_args(const Call& call) {
  for (const Expr& a : call.args) {
    type_check(a->dtype.is_integer())
        << "tir.interpret: " << builtin_name(call.op) << " expects integer arguments, found dtype "
        << a->dtype << " in " << to_script(Expr(&call));
  }
}

}  // namespace

ExprCodePtr compile_call(Compiler& compiler, const Call& call) {
  DataType t = call.dtype;
  auto arg = [&](size_t i) {
    internal_check(i < call.args.size())
        << "tir.interpret: " << builtin_name(call.op) << " has too few arguments";
    return compiler.expr(call.args[i]);
  };
  if (UnaryMath fn = unary_math(call.op)) {
    check_float_args(call);
    return std::make_unique<UnaryMathCode>(t, fn, arg(0));
  }
  switch (call.op) {
    case Builtin::Pow:
      check_float_args(call);
      return std::make_unique<PowCode>(t, arg(0), arg(1));
    case Builtin::IsNan:
      check_float_args(call);
      return std::make_unique<IsNanCode>(t, arg(0));
    case Builtin::Abs:
      return std::make_unique<AbsCode>(t, arg(0));
    case Builtin::ShiftLeft:
    case Builtin::ShiftRight:
    case Builtin::BitwiseAnd:
    case Builtin::BitwiseOr:
    case Builtin::BitwiseXor:
    case Builtin::BitwiseNot:
    case Builtin::Popcount: {
      check_integer_args(call);
      std::vector<ExprCodePtr> args;
      for (size_t i = 0; i < call.args.size(); ++i) args.push_back(arg(i));
      return std::make_unique<BitCode>(t, call.op, std::move(args), to_script(Expr(&call)));
    }
    case Builtin::IfThenElse:
      if (call.args.size() == 3 && call.args[0]->dtype.lanes() > 1) {
        return std::make_unique<LanewiseIfThenElseCode>(compiler, call);
      }
      return std::make_unique<IfThenElseCode>(t, arg(0), arg(1), arg(2));
    case Builtin::Likely:
    case Builtin::PtxCpAsync:  // the copy completes at once: every wait finds it done
      return arg(0);
    case Builtin::CallExtern:
    case Builtin::CallPureExtern:
      return compile_extern_call(compiler, call);
    case Builtin::Reinterpret: {
      ExprCodePtr a = arg(0);
      user_check(a->dtype().bits() * a->lanes() == t.bits() * t.lanes() && !t.is_bool() &&
                 !a->dtype().is_bool())
          << "tir.interpret: reinterpret of " << a->dtype() << " as " << t
          << " is not supported (the total widths must be equal and neither may be bool)";
      return std::make_unique<ReinterpretCode>(t, std::move(a));
    }
    default:
      break;
  }
  user_error(ErrorKind::kValue) << "tir.interpret: the builtin " << builtin_name(call.op)
                                << " is not supported by the interpreter: "
                                << unsupported_reason(call.op) << " (in " << to_script(Expr(&call))
                                << ")";
}

}  // namespace kiln::interpreter
