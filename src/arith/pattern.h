// A small pattern language for the rewrite rules of the simplifier, so that a rule reads like
// the math it states:
//
//   PVar x, y;  PConst c1, c2;
//   Rewriter rewrite(e);
//   if (rewrite((x + c1) + c2, x + fold(c1 + c2)) ||
//       rewrite(floordiv(x * c1, c2), x * fold(c1 / c2), c2 != 0 && c1 % c2 == 0))
//     return rewrite.result();
//
// A pattern is an expression template. `match` binds its variables (a variable used twice
// must match equal expressions); `eval` builds the result from the bindings with the builders
// of kiln/ir/op.h; `fold` computes a pattern over constants as an integer, which is how side
// conditions and `fold(...)` results are evaluated. A fold that overflows the dtype or divides
// by zero fails, and the rule then does not apply.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "kiln/ir/op.h"
#include "src/arith/expr_compare.h"
#include "src/arith/int_math.h"

namespace kiln::arith::pattern {

// Base of every pattern (CRTP tag).
template <class Derived>
struct Pattern {};

template <class T>
constexpr bool is_pattern_v = std::is_base_of_v<Pattern<T>, T>;

// The result of folding: a value with its dtype, or nothing when the fold failed.
struct Folded {
  std::optional<int64_t> value;
  ir::DataType dtype;
};

// Any expression.
class PVar : public Pattern<PVar> {
 public:
  bool match(const ir::Expr& e) const {
    if (!value_.defined()) {
      value_ = e;
      return true;
    }
    return value_.same_as(e) || deep_equal(value_, e);
  }
  void reset() const { value_ = nullptr; }
  ir::Expr eval(ir::DataType) const { return value_; }
  // The bound expression, for conditions written in C++.
  const ir::Expr& value() const { return value_; }

 private:
  mutable ir::Expr value_;
};

// A scalar integer constant (an IntImm).
class PConst : public Pattern<PConst> {
 public:
  bool match(const ir::Expr& e) const {
    const auto* imm = e.as<ir::IntImm>();
    if (imm == nullptr || imm->dtype.is_bool()) return false;
    if (!bound_) {
      bound_ = true;
      value_ = imm->value;
      dtype_ = imm->dtype;
      return true;
    }
    return value_ == imm->value && dtype_ == imm->dtype;
  }
  void reset() const { bound_ = false; }
  ir::Expr eval(ir::DataType) const { return ir::make_const(dtype_, value_); }
  Folded fold() const { return {value_, dtype_}; }
  int64_t value() const { return value_; }

 private:
  mutable bool bound_ = false;
  mutable int64_t value_ = 0;
  mutable ir::DataType dtype_;
};

// An integer literal of a rule, e.g. the 0 of `x + 0`. It takes the dtype of its context.
class PLit : public Pattern<PLit> {
 public:
  explicit PLit(int64_t value) : value_(value) {}
  bool match(const ir::Expr& e) const {
    const auto* imm = e.as<ir::IntImm>();
    return imm != nullptr && !imm->dtype.is_bool() && imm->value == value_;
  }
  void reset() const {}
  ir::Expr eval(ir::DataType hint) const { return ir::make_const(hint, value_); }
  Folded fold() const { return {value_, ir::DataType()}; }

 private:
  int64_t value_;
};

// Leaves are held by reference (their bindings are shared by the whole rule), composite
// patterns by value (they are temporaries of the rule's full expression).
template <class T>
using Held = std::conditional_t<std::is_same_v<T, PVar> || std::is_same_v<T, PConst>, const T&, T>;

// A pattern passes through by reference; an integer becomes a literal.
template <class T>
decltype(auto) as_pattern(const T& value) {
  if constexpr (std::is_integral_v<T>) {
    return PLit(static_cast<int64_t>(value));
  } else {
    static_assert(is_pattern_v<T>, "not a pattern");
    return (value);
  }
}
template <class T>
using PatternOf = std::decay_t<decltype(as_pattern(std::declval<const T&>()))>;

// ---------------------------------------------------------------------------------------------
// Folding of the operators on int64 values, exact; nothing when the result leaves the dtype.

namespace detail {

bool fits(int64_t value, ir::DataType dtype);
std::optional<int64_t> fold_op(ir::NodeKind kind, int64_t a, int64_t b);

// The dtype of a binary fold: the first operand's, unless it is a literal.
inline ir::DataType pick(const Folded& a, const Folded& b) {
  return a.dtype.bits() != 0 ? a.dtype : b.dtype;
}

template <class Node>
ir::Expr build(ir::Expr a, ir::Expr b) {
  using namespace ir;
  constexpr NodeKind k = Node::kKind;
  if constexpr (k == NodeKind::Add) return add(a, b);
  if constexpr (k == NodeKind::Sub) return sub(a, b);
  if constexpr (k == NodeKind::Mul) return mul(a, b);
  if constexpr (k == NodeKind::Div) return truncdiv(a, b);
  if constexpr (k == NodeKind::Mod) return truncmod(a, b);
  if constexpr (k == NodeKind::FloorDiv) return floordiv(a, b);
  if constexpr (k == NodeKind::FloorMod) return floormod(a, b);
  if constexpr (k == NodeKind::Min) return min(a, b);
  if constexpr (k == NodeKind::Max) return max(a, b);
  if constexpr (k == NodeKind::EQ) return eq(a, b);
  if constexpr (k == NodeKind::NE) return ne(a, b);
  if constexpr (k == NodeKind::LT) return lt(a, b);
  if constexpr (k == NodeKind::LE) return le(a, b);
  if constexpr (k == NodeKind::GT) return gt(a, b);
  if constexpr (k == NodeKind::GE) return ge(a, b);
  if constexpr (k == NodeKind::And) return logical_and(a, b);
  if constexpr (k == NodeKind::Or) return logical_or(a, b);
}

}  // namespace detail

// A binary node: Add, Sub, ..., comparisons, And, Or.
template <class Node, class A, class B>
class PBinary : public Pattern<PBinary<Node, A, B>> {
 public:
  PBinary(const A& a, const B& b) : a_(a), b_(b) {}

  bool match(const ir::Expr& e) const {
    const auto* n = e.as<Node>();
    return n != nullptr && a_.match(n->a) && b_.match(n->b);
  }
  void reset() const {
    a_.reset();
    b_.reset();
  }
  ir::Expr eval(ir::DataType hint) const {
    // A literal operand takes the dtype of the other operand.
    ir::Expr a, b;
    if constexpr (std::is_same_v<A, PLit>) {
      b = b_.eval(hint);
      if (!b.defined()) return nullptr;
      a = a_.eval(b->dtype);
    } else {
      a = a_.eval(hint);
      if (!a.defined()) return nullptr;
      b = b_.eval(a->dtype);
    }
    if (!a.defined() || !b.defined()) return nullptr;
    return detail::build<Node>(a, b);
  }
  Folded fold() const {
    constexpr ir::NodeKind k = Node::kKind;
    Folded a = a_.fold();
    if constexpr (k == ir::NodeKind::And || k == ir::NodeKind::Or) {
      // Short-circuits, so that `c2 != 0 && c1 % c2 == 0` never divides by zero.
      ir::DataType t = ir::DataType::bool_();
      if (!a.value) return {std::nullopt, t};
      if (k == ir::NodeKind::And && *a.value == 0) return {0, t};
      if (k == ir::NodeKind::Or && *a.value != 0) return {1, t};
      Folded b = b_.fold();
      if (!b.value) return {std::nullopt, t};
      return {*b.value != 0 ? 1 : 0, t};
    } else {
      Folded b = b_.fold();
      ir::DataType t = detail::pick(a, b);
      if (!a.value || !b.value) return {std::nullopt, t};
      std::optional<int64_t> r = detail::fold_op(k, *a.value, *b.value);
      if (r && !detail::fits(*r, t)) r = std::nullopt;
      bool is_bool_result = k == ir::NodeKind::EQ || k == ir::NodeKind::NE ||
                            k == ir::NodeKind::LT || k == ir::NodeKind::LE ||
                            k == ir::NodeKind::GT || k == ir::NodeKind::GE;
      return {r, is_bool_result ? ir::DataType::bool_() : t};
    }
  }

 private:
  Held<A> a_;
  Held<B> b_;
};

// !a
template <class A>
class PNot : public Pattern<PNot<A>> {
 public:
  explicit PNot(const A& a) : a_(a) {}
  bool match(const ir::Expr& e) const {
    const auto* n = e.as<ir::Not>();
    return n != nullptr && a_.match(n->a);
  }
  void reset() const { a_.reset(); }
  ir::Expr eval(ir::DataType hint) const {
    ir::Expr a = a_.eval(hint);
    return a.defined() ? ir::logical_not(a) : nullptr;
  }
  Folded fold() const {
    Folded a = a_.fold();
    if (!a.value) return {std::nullopt, ir::DataType::bool_()};
    return {*a.value == 0 ? 1 : 0, ir::DataType::bool_()};
  }

 private:
  Held<A> a_;
};

// select(c, a, b)
template <class C, class A, class B>
class PSelect : public Pattern<PSelect<C, A, B>> {
 public:
  PSelect(const C& c, const A& a, const B& b) : c_(c), a_(a), b_(b) {}
  bool match(const ir::Expr& e) const {
    const auto* n = e.as<ir::Select>();
    return n != nullptr && c_.match(n->condition) && a_.match(n->true_value) &&
           b_.match(n->false_value);
  }
  void reset() const {
    c_.reset();
    a_.reset();
    b_.reset();
  }
  ir::Expr eval(ir::DataType hint) const {
    ir::Expr c = c_.eval(ir::DataType::bool_()), a = a_.eval(hint), b = b_.eval(hint);
    if (!c.defined() || !a.defined() || !b.defined()) return nullptr;
    return ir::select(c, a, b);
  }

 private:
  Held<C> c_;
  Held<A> a_;
  Held<B> b_;
};

// fold(p): the constant value of a pattern over constants, as a result.
template <class P>
class PFold : public Pattern<PFold<P>> {
 public:
  explicit PFold(const P& p) : p_(p) {}
  ir::Expr eval(ir::DataType hint) const {
    Folded f = p_.fold();
    if (!f.value) return nullptr;
    return ir::make_const(f.dtype.bits() != 0 ? f.dtype : hint, *f.value);
  }
  Folded fold() const { return p_.fold(); }
  void reset() const {}

 private:
  P p_;
};

// A side condition computed in C++ (e.g. a proof by the analyzer), made lazy.
template <class F>
class PWhen : public Pattern<PWhen<F>> {
 public:
  explicit PWhen(F f) : f_(std::move(f)) {}
  Folded fold() const { return {f_() ? 1 : 0, ir::DataType::bool_()}; }
  void reset() const {}

 private:
  F f_;
};

template <class F>
PWhen<F> when(F f) {
  return PWhen<F>(std::move(f));
}

template <class P>
PFold<P> fold(const P& p) {
  return PFold<P>(p);
}

// Operators and functions that build patterns. Each takes patterns or integer literals, and at
// least one pattern (so that they never capture arithmetic on plain Exprs).
#define KILN_PATTERN_BINARY(op_name, Node)                                                  \
  template <class A, class B, class = std::enable_if_t<is_pattern_v<A> || is_pattern_v<B>>> \
  PBinary<ir::Node, PatternOf<A>, PatternOf<B>> op_name(const A& a, const B& b) {           \
    return PBinary<ir::Node, PatternOf<A>, PatternOf<B>>(as_pattern(a), as_pattern(b));     \
  }
KILN_PATTERN_BINARY(operator+, Add)
KILN_PATTERN_BINARY(operator-, Sub)
KILN_PATTERN_BINARY(operator*, Mul)
KILN_PATTERN_BINARY(operator/, Div)
KILN_PATTERN_BINARY(operator%, Mod)
KILN_PATTERN_BINARY(truncdiv, Div)
KILN_PATTERN_BINARY(truncmod, Mod)
KILN_PATTERN_BINARY(floordiv, FloorDiv)
KILN_PATTERN_BINARY(floormod, FloorMod)
KILN_PATTERN_BINARY(min, Min)
KILN_PATTERN_BINARY(max, Max)
KILN_PATTERN_BINARY(operator==, EQ)
KILN_PATTERN_BINARY(operator!=, NE)
KILN_PATTERN_BINARY(operator<, LT)
KILN_PATTERN_BINARY(operator<=, LE)
KILN_PATTERN_BINARY(operator>, GT)
KILN_PATTERN_BINARY(operator>=, GE)
KILN_PATTERN_BINARY(operator&&, And)
KILN_PATTERN_BINARY(operator||, Or)
#undef KILN_PATTERN_BINARY

template <class A, class = std::enable_if_t<is_pattern_v<A>>>
PNot<A> operator!(const A& a) {
  return PNot<A>(a);
}

template <class A, class = std::enable_if_t<is_pattern_v<A>>>
PBinary<ir::Sub, PLit, A> operator-(const A& a) {
  return PBinary<ir::Sub, PLit, A>(PLit(0), a);
}

template <class C, class A, class B>
PSelect<PatternOf<C>, PatternOf<A>, PatternOf<B>> select(const C& c, const A& a, const B& b) {
  return PSelect<PatternOf<C>, PatternOf<A>, PatternOf<B>>(as_pattern(c), as_pattern(a),
                                                           as_pattern(b));
}

// Applies rules to one expression: `rewrite(pattern, result[, condition])` is true when the
// pattern matches, the condition holds and the result could be built; `result()` is then the
// rewritten expression.
class Rewriter {
 public:
  explicit Rewriter(ir::Expr e) : expr_(std::move(e)) {}

  template <class P, class R>
  bool operator()(const P& pattern, const R& result) {
    return apply(pattern, as_pattern(result), PLit(1));
  }
  template <class P, class R, class C>
  bool operator()(const P& pattern, const R& result, const C& condition) {
    return apply(pattern, as_pattern(result), condition);
  }

  const ir::Expr& result() const { return result_; }

 private:
  template <class P, class R, class C>
  bool apply(const P& pattern, const R& result, const C& condition) {
    pattern.reset();
    if (!pattern.match(expr_)) return false;
    Folded holds = condition.fold();
    if (!holds.value || *holds.value == 0) return false;
    result_ = result.eval(expr_->dtype);
    return result_.defined();
  }

  ir::Expr expr_;
  ir::Expr result_;
};

}  // namespace kiln::arith::pattern
