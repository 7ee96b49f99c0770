// Builders for expressions and statements that check types and apply kiln's promotion rules.
// Use these rather than `make<Add>(…)`: the node constructors trust their caller.
//
// Promotion of two operands a, b of a binary operation (checked at construction):
//  1. Equal dtypes are kept.
//  2. A scalar meets a vector: the scalar is broadcast to the vector's lanes. Two vectors with
//     different lanes are a type error.
//  3. bool meets a number: the bool is cast to the number's type.
//  4. An integer meets a float: the integer is cast to the float type.
//  5. Two floats of different widths: the narrower is cast to the wider. float16 with bfloat16
//     is a type error (neither holds the other).
//  6. Two signed, or two unsigned, integers: the narrower is cast to the wider.
//  7. A signed and an unsigned integer: the unsigned one is cast to the signed type when it is
//     strictly narrower; otherwise it is a type error (cast one operand explicitly).
//  8. A handle or a string never takes part in arithmetic.
// A literal (the int64_t / double overloads, and Python numbers) takes the type of the other
// operand when that type can hold it: an integer literal adapts to any numeric type, a float
// literal to any float type; a float literal meeting an integer expression makes it float32
// (as in TVM: `i * 0.5` is float32).
//
// Constant operands are folded (IntImm + IntImm is an IntImm). Unsigned and 8/16-bit results
// wrap to their width, as at run time; a folded int32 or int64 sum, difference or product that
// overflows (index arithmetic, assumed never to overflow) is a kValue error, never a wrapped
// constant.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/stmt.h"

namespace kiln::ir {

// Constants. A vector dtype gives a Broadcast of the scalar constant. An integer value that does
// not fit an integer dtype is a kValue error (a literal never wraps silently); a nonzero value
// of a bool dtype is true.
Expr make_const(DataType dtype, int64_t value);
Expr make_const(DataType dtype, double value);
// An int literal is an integer constant (without this, `make_const(t, 1)` would be ambiguous).
inline Expr make_const(DataType dtype, int value) {
  return make_const(dtype, int64_t{value});
}
Expr make_zero(DataType dtype);
Expr make_one(DataType dtype);
// The constant wrapped to the width of an integer dtype (sign- or zero-extended).
int64_t wrap_to_dtype(int64_t value, DataType dtype);
// Whether an integer value fits a dtype without wrapping (any value fits a 64-bit or float
// dtype; bool takes 0 and 1). make_const and literal conversion refuse values that do not fit.
bool fits_dtype(int64_t value, DataType dtype);
// The range of an integer dtype as text, "[-128, 127]", for messages.
std::string dtype_range(DataType dtype);
// The greatest and least values of a numeric dtype, as constants. For floats these are the
// largest and lowest finite values, as in TVM: a max reduction over a fully masked row then
// stays finite (-inf would turn a masked softmax row into NaN).
Expr max_value(DataType dtype);
Expr min_value(DataType dtype);
Expr int32_const(int64_t value);
Expr bool_const(bool value);

// The constant value of an IntImm (or a Broadcast of one), if `e` is one.
const int64_t* as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);

Ref<Var> make_var(const std::string& name, DataType dtype = DataType::int32());
Ref<Var> make_size_var(const std::string& name, DataType dtype = DataType::int32());

// Arithmetic with promotion (see above).
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr neg(Expr a);
// True division: floats only (an integer operand is a type error: use floordiv or truncdiv).
Expr div(Expr a, Expr b);
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
// Logical operators take bools (a number is compared with zero first).
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
// The terms of a conjunction, left to right (`a and (b and c)`: a, b, c), without the terms that
// are the constant true; none for an undefined condition.
std::vector<Expr> conjuncts(const Expr& condition);
Expr select(Expr condition, Expr true_value, Expr false_value);
// Conversion; returns `value` itself when it already has `dtype`.
Expr cast(DataType dtype, Expr value);
// A builtin call with its argument types checked (math builtins want floats …).
Expr call(Builtin op, std::vector<Expr> args);
// A builtin call whose result dtype is given (reinterpret, extern calls, intrinsics).
Expr call(DataType dtype, Builtin op, std::vector<Expr> args);
Expr if_then_else(Expr condition, Expr true_value, Expr false_value);
Expr ramp(Expr base, Expr stride, int lanes);
Expr broadcast(Expr value, int lanes);
Expr let(Ref<Var> var, Expr value, Expr body);

// buffer[indices]: checks the index count against the buffer's dimensions and that each index
// is an integer; the result has the buffer's dtype (with the lanes of a vector index).
Expr buffer_load(const Ref<Buffer>& buffer, std::vector<Expr> indices);
Stmt buffer_store(const Ref<Buffer>& buffer, Expr value, std::vector<Expr> indices);

// The two operands converted by the promotion rules; `op` names the operator in errors.
std::pair<Expr, Expr> promote(const char* op, Expr a, Expr b);
// A literal converted to the type of `other` (see "literal" above).
Expr literal_like(int64_t value, const Expr& other);
Expr literal_like(double value, const Expr& other);

// Operators for C++ code that builds IR: + - * and unary -, with Expr or literal operands.
inline Expr operator+(Expr a, Expr b) {
  return add(std::move(a), std::move(b));
}
inline Expr operator-(Expr a, Expr b) {
  return sub(std::move(a), std::move(b));
}
inline Expr operator*(Expr a, Expr b) {
  return mul(std::move(a), std::move(b));
}
inline Expr operator-(Expr a) {
  return neg(std::move(a));
}
inline Expr operator+(Expr a, int64_t b) {
  return add(a, literal_like(b, a));
}
inline Expr operator-(Expr a, int64_t b) {
  return sub(a, literal_like(b, a));
}
inline Expr operator*(Expr a, int64_t b) {
  return mul(a, literal_like(b, a));
}
inline Expr operator+(int64_t a, Expr b) {
  return add(literal_like(a, b), b);
}
inline Expr operator-(int64_t a, Expr b) {
  return sub(literal_like(a, b), b);
}
inline Expr operator*(int64_t a, Expr b) {
  return mul(literal_like(a, b), b);
}

}  // namespace kiln::ir
