// Deep equality and a stable order of expressions (see expr_compare.h).
#include "src/arith/expr_compare.h"

#include <cstring>

namespace kiln::arith {

using namespace ir;

namespace {

bool same_dtype(const DataType& a, const DataType& b) {
  return a == b;
}

bool all_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!deep_equal(a[i], b[i])) return false;
  }
  return true;
}

bool binary_children(const Expr& e, const Expr** a, const Expr** b) {
  switch (e->kind()) {
#define KILN_BINARY_CASE(Name) case NodeKind::Name:
    KILN_BINARY_CASE(Add)
    KILN_BINARY_CASE(Sub)
    KILN_BINARY_CASE(Mul)
    KILN_BINARY_CASE(Div)
    KILN_BINARY_CASE(Mod)
    KILN_BINARY_CASE(FloorDiv)
    KILN_BINARY_CASE(FloorMod)
    KILN_BINARY_CASE(Min)
    KILN_BINARY_CASE(Max)
    KILN_BINARY_CASE(EQ)
    KILN_BINARY_CASE(NE)
    KILN_BINARY_CASE(LT)
    KILN_BINARY_CASE(LE)
    KILN_BINARY_CASE(GT)
    KILN_BINARY_CASE(GE)
    KILN_BINARY_CASE(And)
    KILN_BINARY_CASE(Or)
#undef KILN_BINARY_CASE
    {
      const auto* n = static_cast<const BinaryNode*>(e.get());
      *a = &n->a;
      *b = &n->b;
      return true;
    }
    default:
      return false;
  }
}

// The children of a node in a fixed order (binary nodes handled separately).
std::vector<Expr> children(const Expr& e) {
  if (const auto* n = e.as<Not>()) return {n->a};
  if (const auto* n = e.as<Select>()) return {n->condition, n->true_value, n->false_value};
  if (const auto* n = e.as<Cast>()) return {n->value};
  if (const auto* n = e.as<Call>()) return n->args;
  if (const auto* n = e.as<Ramp>()) return {n->base, n->stride};
  if (const auto* n = e.as<Broadcast>()) return {n->value};
  if (const auto* n = e.as<Let>()) return {Expr(n->var), n->value, n->body};
  if (const auto* n = e.as<BufferLoad>()) return n->indices;
  return {};
}

int compare_int(int64_t a, int64_t b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace

bool deep_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind() != b->kind() || !same_dtype(a->dtype, b->dtype)) return false;
  const Expr *aa = nullptr, *ab = nullptr, *ba = nullptr, *bb = nullptr;
  if (binary_children(a, &aa, &ab)) {
    binary_children(b, &ba, &bb);
    return deep_equal(*aa, *ba) && deep_equal(*ab, *bb);
  }
  switch (a->kind()) {
    case NodeKind::IntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::FloatImm: {
      double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
      return std::memcmp(&x, &y, sizeof(double)) == 0;
    }
    case NodeKind::StringImm:
      return a.as<StringImm>()->value == b.as<StringImm>()->value;
    case NodeKind::Var:
      return false;  // different objects
    case NodeKind::Call:
      if (a.as<Call>()->op != b.as<Call>()->op) return false;
      break;
    case NodeKind::Ramp:
      if (a.as<Ramp>()->lanes != b.as<Ramp>()->lanes) return false;
      break;
    case NodeKind::Broadcast:
      if (a.as<Broadcast>()->lanes != b.as<Broadcast>()->lanes) return false;
      break;
    case NodeKind::Let:
      if (!a.as<Let>()->var.same_as(b.as<Let>()->var)) return false;
      break;
    case NodeKind::BufferLoad:
      if (!a.as<BufferLoad>()->buffer.same_as(b.as<BufferLoad>()->buffer)) return false;
      break;
    case NodeKind::Reduce:
      return false;  // only the same object
    default:
      break;
  }
  return all_equal(children(a), children(b));
}

int deep_compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return a.defined() ? 1 : -1;
  if (a->kind() != b->kind()) return a->kind() < b->kind() ? -1 : 1;
  if (a->dtype != b->dtype) {
    if (a->dtype.code() != b->dtype.code()) return a->dtype.code() < b->dtype.code() ? -1 : 1;
    if (a->dtype.bits() != b->dtype.bits()) return a->dtype.bits() < b->dtype.bits() ? -1 : 1;
    return a->dtype.lanes() < b->dtype.lanes() ? -1 : 1;
  }
  const Expr *aa = nullptr, *ab = nullptr, *ba = nullptr, *bb = nullptr;
  if (binary_children(a, &aa, &ab)) {
    binary_children(b, &ba, &bb);
    if (int c = deep_compare(*aa, *ba)) return c;
    return deep_compare(*ab, *bb);
  }
  switch (a->kind()) {
    case NodeKind::IntImm:
      return compare_int(a.as<IntImm>()->value, b.as<IntImm>()->value);
    case NodeKind::FloatImm: {
      double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case NodeKind::StringImm:
      return a.as<StringImm>()->value.compare(b.as<StringImm>()->value);
    case NodeKind::Var:
      return a.as<Var>()->name.compare(b.as<Var>()->name);
    case NodeKind::Call:
      if (a.as<Call>()->op != b.as<Call>()->op) return a.as<Call>()->op < b.as<Call>()->op ? -1 : 1;
      break;
    case NodeKind::Ramp:
      if (int c = compare_int(a.as<Ramp>()->lanes, b.as<Ramp>()->lanes)) return c;
      break;
    case NodeKind::Broadcast:
      if (int c = compare_int(a.as<Broadcast>()->lanes, b.as<Broadcast>()->lanes)) return c;
      break;
    case NodeKind::BufferLoad:
      if (int c = a.as<BufferLoad>()->buffer->name.compare(b.as<BufferLoad>()->buffer->name))
        return c;
      break;
    default:
      break;
  }
  std::vector<Expr> ca = children(a), cb = children(b);
  if (ca.size() != cb.size()) return ca.size() < cb.size() ? -1 : 1;
  for (size_t i = 0; i < ca.size(); ++i) {
    if (int c = deep_compare(ca[i], cb[i])) return c;
  }
  return 0;
}

}  // namespace kiln::arith
