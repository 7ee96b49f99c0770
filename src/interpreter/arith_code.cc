// Arithmetic, comparison, logical and cast nodes. Each operator is a small struct with one rule
// per family (signed, unsigned, float); BinaryCode instantiates it for the family of the node's
// dtype, so that the per-lane loop carries no dispatch.
#include <cmath>

#include "compiler.h"
#include "kiln/support/error.h"

namespace kiln::interpreter {

using namespace kiln::ir;

namespace {

int64_t floordiv_signed(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Arithmetic operators. Integer rules see canonical values and return results that the caller
// wraps to the width; `on_signed` is never called with b == 0 for a dividing operator.
struct AddOp {
  static constexpr bool kDivides = false;
  static int64_t on_signed(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a + b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return round_result<K>(a + b);
  }
};

struct SubOp {
  static constexpr bool kDivides = false;
  static int64_t on_signed(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a - b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return round_result<K>(a - b);
  }
};

struct MulOp {
  static constexpr bool kDivides = false;
  static int64_t on_signed(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a * b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return round_result<K>(a * b);
  }
};

// Truncating division; the one overflowing quotient, INT64_MIN / -1, wraps to INT64_MIN.
struct DivOp {
  static constexpr bool kDivides = true;
  static int64_t on_signed(int64_t a, int64_t b) {
    return b == -1 ? SubOp::on_signed(0, a) : a / b;
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a / b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return round_result<K>(a / b);
  }
};

struct ModOp {
  static constexpr bool kDivides = true;
  static int64_t on_signed(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a % b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return round_result<K>(std::fmod(a, b));
  }
};

// Floor division; on floats floor(a / b) with the quotient rounded to the dtype first.
struct FloorDivOp {
  static constexpr bool kDivides = true;
  static int64_t on_signed(int64_t a, int64_t b) {
    return b == -1 ? SubOp::on_signed(0, a) : floordiv_signed(a, b);
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a / b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return std::floor(round_result<K>(a / b));
  }
};

// Floor modulo: the sign of b. On floats a - floor(a / b) * b, rounding after each step.
struct FloorModOp {
  static constexpr bool kDivides = true;
  static int64_t on_signed(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a % b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    double q = FloorDivOp::on_float<K>(a, b);
    return round_result<K>(a - round_result<K>(q * b));
  }
};

struct MinOp {
  static constexpr bool kDivides = false;
  static int64_t on_signed(int64_t a, int64_t b) { return a < b ? a : b; }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a < b ? a : b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return std::fmin(a, b);
  }
};

struct MaxOp {
  static constexpr bool kDivides = false;
  static int64_t on_signed(int64_t a, int64_t b) { return a > b ? a : b; }
  static uint64_t on_unsigned(uint64_t a, uint64_t b) { return a > b ? a : b; }
  template <NumKind K>
  static double on_float(double a, double b) {
    return std::fmax(a, b);
  }
};

// The one failure of integer arithmetic: a kiln error naming the expression.
[[noreturn]] void raise_division_by_zero(const std::string& text) {
  user_error(ErrorKind::kRuntime) << "tir.interpret: integer division by zero in " << text;
}

template <class Op, NumKind K>
class BinaryCode final : public ResultCode {
 public:
  BinaryCode(DataType dtype, ExprCodePtr a, ExprCodePtr b, std::string text)
      : ResultCode(dtype),
        a_(std::move(a)),
        b_(std::move(b)),
        bits_(K == NumKind::kBool ? 1 : dtype.bits()),
        text_(std::move(text)) {}

  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    const Lane* b = b_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      if constexpr (K == NumKind::kInt || K == NumKind::kUInt || K == NumKind::kBool) {
        if constexpr (Op::kDivides) {
          if (b[i].i == 0) raise_division_by_zero(text_);
        }
        if constexpr (K == NumKind::kInt) {
          out[i].i = wrap_signed(Op::on_signed(a[i].i, b[i].i), bits_);
        } else {
          uint64_t r =
              Op::on_unsigned(static_cast<uint64_t>(a[i].i), static_cast<uint64_t>(b[i].i));
          out[i].i = wrap_unsigned(static_cast<int64_t>(r), bits_);
        }
      } else {
        out[i].f = Op::template on_float<K>(a[i].f, b[i].f);
      }
    }
    return out;
  }

 private:
  ExprCodePtr a_, b_;
  int bits_;
  std::string text_;  // for the division-by-zero message
};

template <class Op>
ExprCodePtr make_arith(const BinaryNode& op, ExprCodePtr a, ExprCodePtr b) {
  DataType t = op.dtype;
  std::string text = Op::kDivides ? to_script(Expr(&op)) : std::string();
  switch (num_kind(t)) {
    case NumKind::kInt:
      return std::make_unique<BinaryCode<Op, NumKind::kInt>>(t, std::move(a), std::move(b), text);
    case NumKind::kUInt:
      return std::make_unique<BinaryCode<Op, NumKind::kUInt>>(t, std::move(a), std::move(b), text);
    case NumKind::kBool:
      return std::make_unique<BinaryCode<Op, NumKind::kBool>>(t, std::move(a), std::move(b), text);
    case NumKind::kFloat64:
      return std::make_unique<BinaryCode<Op, NumKind::kFloat64>>(t, std::move(a), std::move(b),
                                                                 text);
    case NumKind::kFloat32:
      return std::make_unique<BinaryCode<Op, NumKind::kFloat32>>(t, std::move(a), std::move(b),
                                                                 text);
    case NumKind::kFloat16:
      return std::make_unique<BinaryCode<Op, NumKind::kFloat16>>(t, std::move(a), std::move(b),
                                                                 text);
    case NumKind::kBFloat16:
      return std::make_unique<BinaryCode<Op, NumKind::kBFloat16>>(t, std::move(a), std::move(b),
                                                                  text);
  }
  internal_error << "tir.interpret: no arithmetic for dtype " << t;
}

// Comparisons: the operands' family decides how their lanes compare; the result is bool.
struct EqOp {
  template <class T>
  static bool apply(T a, T b) {
    return a == b;
  }
};
struct NeOp {
  template <class T>
  static bool apply(T a, T b) {
    return a != b;
  }
};
struct LtOp {
  template <class T>
  static bool apply(T a, T b) {
    return a < b;
  }
};
struct LeOp {
  template <class T>
  static bool apply(T a, T b) {
    return a <= b;
  }
};
struct GtOp {
  template <class T>
  static bool apply(T a, T b) {
    return a > b;
  }
};
struct GeOp {
  template <class T>
  static bool apply(T a, T b) {
    return a >= b;
  }
};

enum class CompareAs { kSigned, kUnsigned, kFloat };

template <class Op, CompareAs kAs>
class CompareCode final : public ResultCode {
 public:
  CompareCode(DataType dtype, ExprCodePtr a, ExprCodePtr b)
      : ResultCode(dtype), a_(std::move(a)), b_(std::move(b)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    const Lane* b = b_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      if constexpr (kAs == CompareAs::kSigned) {
        out[i].i = Op::apply(a[i].i, b[i].i);
      } else if constexpr (kAs == CompareAs::kUnsigned) {
        out[i].i = Op::apply(static_cast<uint64_t>(a[i].i), static_cast<uint64_t>(b[i].i));
      } else {
        out[i].i = Op::apply(a[i].f, b[i].f);
      }
    }
    return out;
  }

 private:
  ExprCodePtr a_, b_;
};

template <class Op>
ExprCodePtr make_compare(const BinaryNode& op, ExprCodePtr a, ExprCodePtr b) {
  NumKind kind = num_kind(a->dtype());
  if (is_float_kind(kind)) {
    return std::make_unique<CompareCode<Op, CompareAs::kFloat>>(op.dtype, std::move(a),
                                                                std::move(b));
  }
  if (kind == NumKind::kInt) {
    return std::make_unique<CompareCode<Op, CompareAs::kSigned>>(op.dtype, std::move(a),
                                                                 std::move(b));
  }
  return std::make_unique<CompareCode<Op, CompareAs::kUnsigned>>(op.dtype, std::move(a),
                                                                 std::move(b));
}

// And / Or on bools; both operands are evaluated (no short circuit, kiln/ir/expr.h).
template <bool kIsAnd>
class LogicalCode final : public ResultCode {
 public:
  LogicalCode(DataType dtype, ExprCodePtr a, ExprCodePtr b)
      : ResultCode(dtype), a_(std::move(a)), b_(std::move(b)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* a = a_->eval(frame);
    const Lane* b = b_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) {
      out[i].i = kIsAnd ? (a[i].i != 0 && b[i].i != 0) : (a[i].i != 0 || b[i].i != 0);
    }
    return out;
  }

 private:
  ExprCodePtr a_, b_;
};

class CastCode final : public ResultCode {
 public:
  CastCode(DataType dtype, ExprCodePtr value)
      : ResultCode(dtype),
        from_(scalar_type(value->dtype())),
        to_(scalar_type(dtype)),
        value_(std::move(value)) {}
  const Lane* eval(Frame& frame) override {
    const Lane* v = value_->eval(frame);
    Lane* out = this->out();
    for (int i = 0; i < lanes(); ++i) out[i] = convert(v[i], from_, to_);
    return out;
  }

 private:
  ScalarType from_, to_;
  ExprCodePtr value_;
};

}  // namespace

ExprCodePtr make_binary_code(const BinaryNode& op, ExprCodePtr a, ExprCodePtr b) {
  switch (op.kind()) {
    case NodeKind::Add:
      return make_arith<AddOp>(op, std::move(a), std::move(b));
    case NodeKind::Sub:
      return make_arith<SubOp>(op, std::move(a), std::move(b));
    case NodeKind::Mul:
      return make_arith<MulOp>(op, std::move(a), std::move(b));
    case NodeKind::Div:
      return make_arith<DivOp>(op, std::move(a), std::move(b));
    case NodeKind::Mod:
      return make_arith<ModOp>(op, std::move(a), std::move(b));
    case NodeKind::FloorDiv:
      return make_arith<FloorDivOp>(op, std::move(a), std::move(b));
    case NodeKind::FloorMod:
      return make_arith<FloorModOp>(op, std::move(a), std::move(b));
    case NodeKind::Min:
      return make_arith<MinOp>(op, std::move(a), std::move(b));
    case NodeKind::Max:
      return make_arith<MaxOp>(op, std::move(a), std::move(b));
    case NodeKind::EQ:
      return make_compare<EqOp>(op, std::move(a), std::move(b));
    case NodeKind::NE:
      return make_compare<NeOp>(op, std::move(a), std::move(b));
    case NodeKind::LT:
      return make_compare<LtOp>(op, std::move(a), std::move(b));
    case NodeKind::LE:
      return make_compare<LeOp>(op, std::move(a), std::move(b));
    case NodeKind::GT:
      return make_compare<GtOp>(op, std::move(a), std::move(b));
    case NodeKind::GE:
      return make_compare<GeOp>(op, std::move(a), std::move(b));
    case NodeKind::And:
      return std::make_unique<LogicalCode<true>>(op.dtype, std::move(a), std::move(b));
    case NodeKind::Or:
      return std::make_unique<LogicalCode<false>>(op.dtype, std::move(a), std::move(b));
    default:
      break;
  }
  internal_error << "tir.interpret: " << kind_name(op.kind()) << " is not a binary node";
}

ExprCodePtr make_cast_code(DataType dtype, ExprCodePtr value) {
  internal_check(value->lanes() == dtype.lanes())
      << "tir.interpret: a Cast to " << dtype << " of a value of dtype " << value->dtype();
  return std::make_unique<CastCode>(dtype, std::move(value));
}

}  // namespace kiln::interpreter
