// Expression builders: type checks, the promotion rules of kiln/ir/op.h and constant folding.
#include "kiln/ir/op.h"

#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::ir {

// ---------------------------------------------------------------------------------------------
// Constants

int64_t wrap_to_dtype(int64_t value, DataType dtype) {
  if (dtype.is_bool()) return value != 0 ? 1 : 0;
  int bits = dtype.bits();
  if (bits >= 64 || !dtype.is_integer()) return value;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t raw = static_cast<uint64_t>(value) & mask;
  if (dtype.is_int() && (raw >> (bits - 1)) != 0) raw |= ~mask;
  return static_cast<int64_t>(raw);
}

namespace {

Expr broadcast_if_vector(Expr scalar, DataType dtype) {
  if (dtype.lanes() == 1) return scalar;
  return make<Broadcast>(dtype, scalar, dtype.lanes());
}

// The largest finite value of a float dtype.
double largest_finite(DataType t) {
  if (t.is_bfloat16()) return 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
  if (t.bits() == 16) return 65504.0;
  if (t.bits() == 32) return std::numeric_limits<float>::max();
  return std::numeric_limits<double>::max();
}

double round_to_float_dtype(double value, DataType dtype) {
  if (dtype.bits() == 32 && dtype.code() == DataType::kFloat) return static_cast<float>(value);
  return value;
}

}  // namespace

bool fits_dtype(int64_t value, DataType dtype) {
  DataType t = dtype.element_of();
  if (t.is_bool()) return value == 0 || value == 1;
  if (!t.is_integer() || t.bits() >= 64) return true;
  return wrap_to_dtype(value, t) == value;
}

std::string dtype_range(DataType dtype) {
  DataType t = dtype.element_of();
  if (t.is_bool()) return "[0, 1]";
  if (t.is_uint() && t.bits() >= 64) return "[0, 18446744073709551615]";
  if (t.is_uint()) return "[0, " + std::to_string((uint64_t{1} << t.bits()) - 1) + "]";
  if (t.bits() >= 64) return "[-9223372036854775808, 9223372036854775807]";
  return "[" + std::to_string(-(int64_t{1} << (t.bits() - 1))) + ", " +
         std::to_string((int64_t{1} << (t.bits() - 1)) - 1) + "]";
}

Expr make_const(DataType dtype, int64_t value) {
  DataType scalar = dtype.element_of();
  Expr c;
  if (scalar.is_float()) {
    c = make<FloatImm>(scalar, static_cast<double>(value));
  } else {
    type_check(scalar.is_integer() || scalar.is_bool())
        << "make_const: cannot make a constant of dtype " << dtype;
    // bool keeps C's reading of a number as a truth value.
    if (scalar.is_bool()) value = value != 0 ? 1 : 0;
    user_check(fits_dtype(value, scalar))
        << "make_const: the constant " << value << " does not fit " << scalar << " (its range is "
        << dtype_range(scalar) << ")";
    c = make<IntImm>(scalar, value);
  }
  return broadcast_if_vector(c, dtype);
}

Expr make_const(DataType dtype, double value) {
  DataType scalar = dtype.element_of();
  if (scalar.is_float()) {
    return broadcast_if_vector(make<FloatImm>(scalar, round_to_float_dtype(value, scalar)), dtype);
  }
  type_check(scalar.is_integer() || scalar.is_bool())
      << "make_const: cannot make a constant of dtype " << dtype;
  if (scalar.is_bool()) return make_const(dtype, int64_t{value != 0.0 ? 1 : 0});
  // 2^63 is exactly representable; anything at or beyond it (or NaN) is no int64.
  user_check(std::isfinite(value) && value >= -9223372036854775808.0 &&
             value < 9223372036854775808.0)
      << "make_const: the constant " << value << " does not fit " << scalar << " (its range is "
      << dtype_range(scalar) << ")";
  return make_const(dtype, static_cast<int64_t>(value));
}

Expr make_zero(DataType dtype) {
  return make_const(dtype, int64_t{0});
}
Expr make_one(DataType dtype) {
  return make_const(dtype, int64_t{1});
}
Expr int32_const(int64_t value) {
  return make_const(DataType::int32(), value);
}
Expr bool_const(bool value) {
  return make_const(DataType::bool_(), int64_t{value ? 1 : 0});
}

Expr max_value(DataType dtype) {
  DataType t = dtype.element_of();
  if (t.is_float()) return make_const(dtype, largest_finite(t));
  if (t.is_bool()) return make_const(dtype, int64_t{1});
  if (t.is_uint() && t.bits() == 64) return make_const(dtype, int64_t{-1});
  if (t.is_uint()) return make_const(dtype, static_cast<int64_t>((uint64_t{1} << t.bits()) - 1));
  if (t.bits() == 64) return make_const(dtype, std::numeric_limits<int64_t>::max());
  return make_const(dtype, (int64_t{1} << (t.bits() - 1)) - 1);
}

Expr min_value(DataType dtype) {
  DataType t = dtype.element_of();
  if (t.is_float()) return make_const(dtype, -largest_finite(t));
  if (t.is_bool() || t.is_uint()) return make_const(dtype, int64_t{0});
  if (t.bits() == 64) return make_const(dtype, std::numeric_limits<int64_t>::min());
  return make_const(dtype, -(int64_t{1} << (t.bits() - 1)));
}

const int64_t* as_const_int(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (const auto* imm = e.as<IntImm>()) return &imm->value;
  if (const auto* b = e.as<Broadcast>()) return as_const_int(b->value);
  return nullptr;
}

bool is_const_int(const Expr& e, int64_t value) {
  const int64_t* c = as_const_int(e);
  return c != nullptr && *c == value;
}

Ref<Var> make_var(const std::string& name, DataType dtype) {
  return make<Var>(name, dtype);
}
Ref<Var> make_size_var(const std::string& name, DataType dtype) {
  return make<Var>(name, dtype, true);
}

// ---------------------------------------------------------------------------------------------
// Promotion

namespace {

void check_numeric(const char* op, const Expr& e) {
  internal_check(e.defined()) << op << ": null operand";
  type_check(!e->dtype.is_handle() && !e->dtype.is_void())
      << op << ": expected a numeric operand, found an expression of dtype " << e->dtype
      << (e.is<StringImm>() ? " (a string)" : "");
}

// The scalar type both operands are converted to (rules 3-7 of op.h).
DataType common_scalar_type(const char* op, DataType a, DataType b) {
  if (a == b) return a;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.is_float() && !b.is_float()) return a;
  if (b.is_float() && !a.is_float()) return b;
  if (a.is_float() && b.is_float()) {
    type_check(!(a.bits() == 16 && b.bits() == 16))
        << op << ": operands of dtype " << a << " and " << b
        << " cannot be combined (neither type holds the other); cast one operand with astype";
    return a.bits() >= b.bits() ? a : b;
  }
  if (a.code() == b.code()) return a.bits() >= b.bits() ? a : b;
  const DataType& s = a.is_int() ? a : b;
  const DataType& u = a.is_int() ? b : a;
  type_check(u.bits() < s.bits()) << op << ": operands of dtype " << a << " and " << b
                                  << " mix a signed and an unsigned integer that the signed type "
                                     "cannot hold; cast one operand with astype";
  return s;
}

Expr convert(Expr e, DataType scalar, int lanes) {
  if (e->dtype.element_of() != scalar) e = cast(scalar.with_lanes(e->dtype.lanes()), e);
  if (e->dtype.lanes() != lanes) e = broadcast(e, lanes);
  return e;
}

}  // namespace

std::pair<Expr, Expr> promote(const char* op, Expr a, Expr b) {
  check_numeric(op, a);
  check_numeric(op, b);
  if (a->dtype == b->dtype) return {a, b};
  int la = a->dtype.lanes(), lb = b->dtype.lanes();
  type_check(la == lb || la == 1 || lb == 1)
      << op << ": vector operands of dtype " << a->dtype << " and " << b->dtype
      << " have different lane counts";
  int lanes = la > lb ? la : lb;
  DataType scalar = common_scalar_type(op, a->dtype.element_of(), b->dtype.element_of());
  return {convert(a, scalar, lanes), convert(b, scalar, lanes)};
}

Expr literal_like(int64_t value, const Expr& other) {
  internal_check(other.defined()) << "literal_like: null expression";
  DataType t = other->dtype;
  if (t.is_integer()) {
    user_check(fits_dtype(value, t.element_of()) && !(t.is_uint() && t.bits() == 64 && value < 0))
        << "the literal " << value << " does not fit " << t.element_of()
        << ", the dtype of the other operand (its range is " << dtype_range(t.element_of())
        << "); cast the operand to a wider type first, e.g. x.astype(\"int32\")";
  }
  if (t.is_integer() || t.is_float()) return make_const(t.element_of(), value);
  if (value >= INT32_MIN && value <= INT32_MAX) return make_const(DataType::int32(), value);
  return make_const(DataType::int64(), value);
}

Expr literal_like(double value, const Expr& other) {
  internal_check(other.defined()) << "literal_like: null expression";
  DataType t = other->dtype;
  if (t.is_float()) return make_const(t.element_of(), value);
  return make_const(DataType::float32(), value);
}

// ---------------------------------------------------------------------------------------------
// Constant folding

namespace {

int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floormod_int(int64_t a, int64_t b) {
  return a - floordiv_int(a, b) * b;
}

const char* fold_symbol(NodeKind kind) {
  switch (kind) {
    case NodeKind::Add:
      return "+";
    case NodeKind::Sub:
      return "-";
    default:
      return "*";
  }
}

// Folds an integer binary node on two IntImm operands. Division by zero is left unfolded.
// Unsigned and 8- and 16-bit results wrap to their width, as the arithmetic does at run time
// (kiln/ir/expr.h). A signed int32 or int64 sum, difference or product that does not fit is an
// error instead: these are the index types, whose arithmetic is assumed never to overflow, and
// a wrapped extent or offset would silently compute the wrong thing (as signed overflow is
// undefined in C).
Expr fold_int(NodeKind kind, DataType t, int64_t a, int64_t b) {
  bool is_unsigned = t.is_uint() && t.bits() == 64;
  bool wraps = !t.is_int() || t.bits() < 32;
  if (wraps && (kind == NodeKind::Add || kind == NodeKind::Sub || kind == NodeKind::Mul)) {
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    uint64_t r = kind == NodeKind::Add ? ua + ub : kind == NodeKind::Sub ? ua - ub : ua * ub;
    return make<IntImm>(t, wrap_to_dtype(static_cast<int64_t>(r), t));
  }
  if (kind == NodeKind::Add || kind == NodeKind::Sub || kind == NodeKind::Mul) {
    // Exact in 128 bits.
    __int128 x = a, y = b;
    __int128 r = kind == NodeKind::Add ? x + y : kind == NodeKind::Sub ? x - y : x * y;
    bool fits = r >= INT64_MIN && r <= INT64_MAX && fits_dtype(static_cast<int64_t>(r), t);
    if (!fits) {
      auto text = [&](__int128 v) {
        bool negative = v < 0;
        unsigned __int128 m = negative ? -static_cast<unsigned __int128>(v) : v;
        std::string digits;
        do {
          digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
          m /= 10;
        } while (m != 0);
        return (negative ? "-" : "") + digits;
      };
      user_error(ErrorKind::kValue)
          << "constant folding: " << text(x) << " " << fold_symbol(kind) << " " << text(y) << " = "
          << text(r) << " does not fit " << t << " (its range is " << dtype_range(t) << ")"
          << (t.bits() < 64 ? "; compute it in int64" : "");
    }
    return make<IntImm>(t, static_cast<int64_t>(static_cast<uint64_t>(r)));
  }
  switch (kind) {
    case NodeKind::Min:
      if (is_unsigned)
        return make_const(t, static_cast<uint64_t>(a) < static_cast<uint64_t>(b) ? a : b);
      return make_const(t, a < b ? a : b);
    case NodeKind::Max:
      if (is_unsigned)
        return make_const(t, static_cast<uint64_t>(a) > static_cast<uint64_t>(b) ? a : b);
      return make_const(t, a > b ? a : b);
    default:
      break;
  }
  if (b == 0 || is_unsigned || (a == std::numeric_limits<int64_t>::min() && b == -1))
    return nullptr;
  switch (kind) {
    case NodeKind::Div:
      return make_const(t, a / b);
    case NodeKind::Mod:
      return make_const(t, a % b);
    case NodeKind::FloorDiv:
      return make_const(t, floordiv_int(a, b));
    case NodeKind::FloorMod:
      return make_const(t, floormod_int(a, b));
    default:
      return nullptr;
  }
}

Expr fold_compare(NodeKind kind, DataType t, int64_t a, int64_t b) {
  bool r;
  if (t.is_uint() && t.bits() == 64) {
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    r = kind == NodeKind::EQ   ? ua == ub
        : kind == NodeKind::NE ? ua != ub
        : kind == NodeKind::LT ? ua < ub
        : kind == NodeKind::LE ? ua <= ub
        : kind == NodeKind::GT ? ua > ub
                               : ua >= ub;
  } else {
    r = kind == NodeKind::EQ   ? a == b
        : kind == NodeKind::NE ? a != b
        : kind == NodeKind::LT ? a < b
        : kind == NodeKind::LE ? a <= b
        : kind == NodeKind::GT ? a > b
                               : a >= b;
  }
  return bool_const(r);
}

// Float folding only for float32/float64, whose rounding is exact here.
Expr fold_float(NodeKind kind, DataType t, double a, double b) {
  if (!(t.code() == DataType::kFloat && (t.bits() == 32 || t.bits() == 64))) return nullptr;
  switch (kind) {
    case NodeKind::Add:
      return make_const(t, a + b);
    case NodeKind::Sub:
      return make_const(t, a - b);
    case NodeKind::Mul:
      return make_const(t, a * b);
    case NodeKind::Div:
      return make_const(t, a / b);
    default:
      return nullptr;
  }
}

template <class Node>
Expr make_arith(const char* op, Expr a, Expr b) {
  std::tie(a, b) = promote(op, a, b);
  DataType t = a->dtype;
  if (t.is_bool() && (Node::kKind == NodeKind::Add || Node::kKind == NodeKind::Sub ||
                      Node::kKind == NodeKind::Mul || Node::kKind == NodeKind::Div ||
                      Node::kKind == NodeKind::Mod || Node::kKind == NodeKind::FloorDiv ||
                      Node::kKind == NodeKind::FloorMod)) {
    a = cast(DataType::int32().with_lanes(t.lanes()), a);
    b = cast(DataType::int32().with_lanes(t.lanes()), b);
    t = a->dtype;
  }
  if (t.is_scalar()) {
    const auto* ia = a.as<IntImm>();
    const auto* ib = b.as<IntImm>();
    if (ia != nullptr && ib != nullptr) {
      if (Expr folded = fold_int(Node::kKind, t, ia->value, ib->value)) return folded;
    }
    const auto* fa = a.as<FloatImm>();
    const auto* fb = b.as<FloatImm>();
    if (fa != nullptr && fb != nullptr) {
      if (Expr folded = fold_float(Node::kKind, t, fa->value, fb->value)) return folded;
    }
  }
  return make<Node>(t, a, b);
}

template <class Node>
Expr make_compare(const char* op, Expr a, Expr b) {
  std::tie(a, b) = promote(op, a, b);
  DataType t = a->dtype;
  if (t.is_scalar()) {
    const auto* ia = a.as<IntImm>();
    const auto* ib = b.as<IntImm>();
    if (ia != nullptr && ib != nullptr) return fold_compare(Node::kKind, t, ia->value, ib->value);
  }
  return make<Node>(DataType::bool_(t.lanes()), a, b);
}

Expr to_bool(const char* op, Expr e) {
  check_numeric(op, e);
  if (e->dtype.is_bool()) return e;
  return make_compare<NE>(op, e, make_zero(e->dtype));
}

}  // namespace

Expr add(Expr a, Expr b) {
  return make_arith<Add>("+", a, b);
}
Expr sub(Expr a, Expr b) {
  return make_arith<Sub>("-", a, b);
}
Expr mul(Expr a, Expr b) {
  return make_arith<Mul>("*", a, b);
}

Expr neg(Expr a) {
  check_numeric("unary -", a);
  if (const auto* i = a.as<IntImm>()) return make_const(a->dtype, -i->value);
  if (const auto* f = a.as<FloatImm>()) return make_const(a->dtype, -f->value);
  return sub(make_zero(a->dtype), a);
}

Expr div(Expr a, Expr b) {
  std::tie(a, b) = promote("/", a, b);
  type_check(a->dtype.is_float())
      << "/: true division of integer operands (dtype " << a->dtype
      << ") is ambiguous; use // (floordiv) or truncdiv, or cast to a float type";
  return make_arith<Div>("/", a, b);
}

Expr truncdiv(Expr a, Expr b) {
  return make_arith<Div>("truncdiv", a, b);
}
Expr truncmod(Expr a, Expr b) {
  return make_arith<Mod>("truncmod", a, b);
}
Expr floordiv(Expr a, Expr b) {
  return make_arith<FloorDiv>("//", a, b);
}
Expr floormod(Expr a, Expr b) {
  return make_arith<FloorMod>("%", a, b);
}
Expr min(Expr a, Expr b) {
  return make_arith<Min>("min", a, b);
}
Expr max(Expr a, Expr b) {
  return make_arith<Max>("max", a, b);
}
Expr eq(Expr a, Expr b) {
  return make_compare<EQ>("==", a, b);
}
Expr ne(Expr a, Expr b) {
  return make_compare<NE>("!=", a, b);
}
Expr lt(Expr a, Expr b) {
  return make_compare<LT>("<", a, b);
}
Expr le(Expr a, Expr b) {
  return make_compare<LE>("<=", a, b);
}
Expr gt(Expr a, Expr b) {
  return make_compare<GT>(">", a, b);
}
Expr ge(Expr a, Expr b) {
  return make_compare<GE>(">=", a, b);
}

std::vector<Expr> conjuncts(const Expr& condition) {
  std::vector<Expr> terms;
  if (!condition.defined()) return terms;
  std::vector<Expr> pending{condition};
  while (!pending.empty()) {
    Expr e = pending.back();
    pending.pop_back();
    if (const auto* both = e.as<And>()) {
      pending.push_back(both->b);
      pending.push_back(both->a);
    } else if (!is_const_int(e, 1)) {
      terms.push_back(e);
    }
  }
  return terms;
}

Expr logical_and(Expr a, Expr b) {
  a = to_bool("logical_and", a);
  b = to_bool("logical_and", b);
  std::tie(a, b) = promote("logical_and", a, b);
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca != nullptr && a->dtype.is_scalar()) return *ca ? b : a;
  if (cb != nullptr && b->dtype.is_scalar()) return *cb ? a : b;
  return make<And>(a->dtype, a, b);
}

Expr logical_or(Expr a, Expr b) {
  a = to_bool("logical_or", a);
  b = to_bool("logical_or", b);
  std::tie(a, b) = promote("logical_or", a, b);
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca != nullptr && a->dtype.is_scalar()) return *ca ? a : b;
  if (cb != nullptr && b->dtype.is_scalar()) return *cb ? b : a;
  return make<Or>(a->dtype, a, b);
}

Expr logical_not(Expr a) {
  a = to_bool("logical_not", a);
  if (const auto* i = a.as<IntImm>()) return bool_const(i->value == 0);
  return make<Not>(a->dtype, a);
}

Expr select(Expr condition, Expr true_value, Expr false_value) {
  condition = to_bool("select", condition);
  std::tie(true_value, false_value) = promote("select", true_value, false_value);
  int lanes = true_value->dtype.lanes();
  type_check(condition->dtype.lanes() == 1 || condition->dtype.lanes() == lanes)
      << "select: condition of dtype " << condition->dtype << " does not match values of dtype "
      << true_value->dtype;
  if (const auto* c = condition.as<IntImm>()) return c->value ? true_value : false_value;
  return make<Select>(true_value->dtype, condition, true_value, false_value);
}

Expr cast(DataType dtype, Expr value) {
  internal_check(value.defined()) << "cast: null expression";
  if (value->dtype == dtype) return value;
  type_check(!value->dtype.is_handle() && !dtype.is_handle() && !dtype.is_void())
      << "astype: cannot convert an expression of dtype " << value->dtype << " to " << dtype;
  if (value->dtype.lanes() == 1 && dtype.lanes() > 1) {
    return broadcast(cast(dtype.element_of(), value), dtype.lanes());
  }
  type_check(value->dtype.lanes() == dtype.lanes())
      << "astype: cannot convert " << value->dtype << " to " << dtype << ": lane counts differ";
  if (dtype.is_scalar()) {
    if (const auto* i = value.as<IntImm>()) {
      if (value->dtype.is_uint() && value->dtype.bits() == 64 && dtype.is_float()) {
        return make_const(dtype, static_cast<double>(static_cast<uint64_t>(i->value)));
      }
      // An integer conversion wraps to the narrower width (kiln/ir/expr.h: Cast).
      if (dtype.is_integer()) return make_const(dtype, wrap_to_dtype(i->value, dtype));
      return make_const(dtype, i->value);
    }
    if (const auto* f = value.as<FloatImm>()) {
      if (dtype.is_float()) return make_const(dtype, f->value);
      if (dtype.is_bool()) return bool_const(f->value != 0.0);
    }
  }
  return make<Cast>(dtype, value);
}

namespace {

bool is_float_math(Builtin op) {
  switch (op) {
    case Builtin::Exp:
    case Builtin::Exp2:
    case Builtin::Log:
    case Builtin::Log2:
    case Builtin::Log1p:
    case Builtin::Sqrt:
    case Builtin::Rsqrt:
    case Builtin::Sin:
    case Builtin::Cos:
    case Builtin::Tan:
    case Builtin::Tanh:
    case Builtin::Sigmoid:
    case Builtin::Erf:
    case Builtin::Floor:
    case Builtin::Ceil:
    case Builtin::Round:
    case Builtin::Trunc:
    case Builtin::Pow:
    case Builtin::IsNan:
      return true;
    default:
      return false;
  }
}

bool is_integer_bit_op(Builtin op) {
  switch (op) {
    case Builtin::ShiftLeft:
    case Builtin::ShiftRight:
    case Builtin::BitwiseAnd:
    case Builtin::BitwiseOr:
    case Builtin::BitwiseXor:
    case Builtin::BitwiseNot:
    case Builtin::Popcount:
      return true;
    default:
      return false;
  }
}

}  // namespace

Expr call(Builtin op, std::vector<Expr> args) {
  const char* name = builtin_name(op);
  int arity = builtin_arity(op);
  index_check(arity < 0 || static_cast<int>(args.size()) == arity)
      << name << ": expected " << arity << " argument" << (arity == 1 ? "" : "s") << ", found "
      << args.size();
  for (const Expr& a : args) internal_check(a.defined()) << name << ": null argument";
  if (op == Builtin::IfThenElse) return if_then_else(args[0], args[1], args[2]);
  if (is_float_math(op)) {
    if (args.size() == 2) std::tie(args[0], args[1]) = promote(name, args[0], args[1]);
    type_check(args[0]->dtype.is_float())
        << name << ": expected a float expression, found dtype " << args[0]->dtype
        << "; convert it first, e.g. x.astype(\"float32\")";
    DataType result =
        op == Builtin::IsNan ? DataType::bool_(args[0]->dtype.lanes()) : args[0]->dtype;
    return make<Call>(result, op, std::move(args));
  }
  if (is_integer_bit_op(op)) {
    if (args.size() == 2) std::tie(args[0], args[1]) = promote(name, args[0], args[1]);
    type_check(args[0]->dtype.is_integer())
        << name << ": expected an integer expression, found dtype " << args[0]->dtype;
    return make<Call>(args[0]->dtype, op, std::move(args));
  }
  if (op == Builtin::Abs) {
    check_numeric(name, args[0]);
    if (args[0]->dtype.is_uint() || args[0]->dtype.is_bool()) return args[0];
    return make<Call>(args[0]->dtype, op, std::move(args));
  }
  if (op == Builtin::Likely) {
    Expr c = to_bool(name, args[0]);
    return make<Call>(c->dtype, op, std::vector<Expr>{c});
  }
  if (op == Builtin::StorageSync) return make<Call>(DataType::int32(), op, std::move(args));
  user_error(ErrorKind::kType) << name << ": the result dtype of this builtin must be given";
}

Expr call(DataType dtype, Builtin op, std::vector<Expr> args) {
  int arity = builtin_arity(op);
  index_check(arity < 0 || static_cast<int>(args.size()) == arity)
      << builtin_name(op) << ": expected " << arity << " arguments, found " << args.size();
  if (op == Builtin::Reinterpret) {
    type_check(args[0]->dtype.bits() * args[0]->dtype.lanes() == dtype.bits() * dtype.lanes())
        << "reinterpret: cannot reinterpret " << args[0]->dtype << " as " << dtype
        << ": the sizes differ";
  }
  return make<Call>(dtype, op, std::move(args));
}

Expr if_then_else(Expr condition, Expr true_value, Expr false_value) {
  condition = to_bool("if_then_else", condition);
  type_check(condition->dtype.is_scalar())
      << "if_then_else: the condition must be a scalar bool, found dtype " << condition->dtype;
  std::tie(true_value, false_value) = promote("if_then_else", true_value, false_value);
  if (const auto* c = condition.as<IntImm>()) return c->value ? true_value : false_value;
  return make<Call>(true_value->dtype, Builtin::IfThenElse,
                    std::vector<Expr>{condition, true_value, false_value});
}

Expr ramp(Expr base, Expr stride, int lanes) {
  user_check(lanes > 1) << "ramp: lanes must be greater than 1, found " << lanes;
  std::tie(base, stride) = promote("ramp", base, stride);
  type_check(base->dtype.is_scalar() && base->dtype.is_integer())
      << "ramp: base and stride must be scalar integers, found dtype " << base->dtype;
  return make<Ramp>(base->dtype.with_lanes(lanes), base, stride, lanes);
}

Expr broadcast(Expr value, int lanes) {
  internal_check(value.defined()) << "broadcast: null expression";
  type_check(value->dtype.is_scalar())
      << "broadcast: expected a scalar value, found dtype " << value->dtype;
  if (lanes == 1) return value;
  user_check(lanes > 1) << "broadcast: lanes must be positive, found " << lanes;
  return make<Broadcast>(value->dtype.with_lanes(lanes), value, lanes);
}

Expr let(Ref<Var> var, Expr value, Expr body) {
  type_check(var->dtype == value->dtype)
      << "let: variable " << var->name << " has dtype " << var->dtype << " but its value has dtype "
      << value->dtype;
  DataType t = body->dtype;
  return make<Let>(t, std::move(var), std::move(value), std::move(body));
}

namespace {

int check_indices(const char* api, const Buffer& buffer, std::vector<Expr>* indices) {
  index_check(static_cast<int>(indices->size()) == buffer.ndim())
      << api << ": buffer " << buffer.name << " has " << buffer.ndim() << " dimension"
      << (buffer.ndim() == 1 ? "" : "s") << " but " << indices->size() << " ind"
      << (indices->size() == 1 ? "ex was" : "ices were") << " given";
  int lanes = 1;
  for (size_t i = 0; i < indices->size(); ++i) {
    Expr& index = (*indices)[i];
    internal_check(index.defined()) << api << ": null index";
    type_check(index->dtype.is_integer())
        << api << ": index " << i << " of buffer " << buffer.name
        << " must be an integer expression, found dtype " << index->dtype;
    if (index->dtype.lanes() > 1) {
      type_check(lanes == 1 || lanes == index->dtype.lanes())
          << api << ": vector indices of buffer " << buffer.name << " have different lane counts";
      lanes = index->dtype.lanes();
    }
  }
  return lanes;
}

}  // namespace

Expr buffer_load(const Ref<Buffer>& buffer, std::vector<Expr> indices) {
  int lanes = check_indices("BufferLoad", *buffer, &indices);
  return make<BufferLoad>(buffer->dtype.with_lanes(lanes), buffer, std::move(indices));
}

Stmt buffer_store(const Ref<Buffer>& buffer, Expr value, std::vector<Expr> indices) {
  int lanes = check_indices("BufferStore", *buffer, &indices);
  internal_check(value.defined()) << "BufferStore: null value";
  if (value->dtype.element_of() != buffer->dtype) {
    type_check(value.is<IntImm>() || value.is<FloatImm>())
        << "BufferStore: value of dtype " << value->dtype << " cannot be stored in buffer "
        << buffer->name << " of dtype " << buffer->dtype << " without an explicit astype";
    value = cast(buffer->dtype.with_lanes(value->dtype.lanes()), value);
  }
  if (value->dtype.lanes() == 1 && lanes > 1) value = broadcast(value, lanes);
  type_check(value->dtype.lanes() == lanes)
      << "BufferStore: value of dtype " << value->dtype << " stored at an index with " << lanes
      << " lanes in buffer " << buffer->name;
  return make<BufferStore>(buffer, std::move(value), std::move(indices));
}

}  // namespace kiln::ir
