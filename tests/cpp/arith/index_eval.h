// A small evaluator of integer index expressions for the interval-set and iterator-map tests:
// constants, variables from a value map, arithmetic, floor and truncating division, min/max,
// comparisons, logic, Select, integer Cast and Let. Values are int64 (no wrapping: the tests
// keep values small).
#pragma once

#include <unordered_map>

#include "kiln/ir/expr.h"
#include "kiln/support/error.h"

namespace kiln::arith::testing {

using IndexValues = std::unordered_map<const ir::Var*, int64_t>;

inline int64_t floordiv_value(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline int64_t eval_index(const ir::Expr& e, const IndexValues& values) {
  using namespace ir;
  if (const auto* c = e.as<IntImm>()) return c->value;
  if (const auto* v = e.as<Var>()) {
    auto it = values.find(v);
    internal_check(it != values.end()) << "eval_index: no value for " << v->name;
    return it->second;
  }
  if (const auto* s = e.as<Select>()) {
    return eval_index(s->condition, values) != 0 ? eval_index(s->true_value, values)
                                                 : eval_index(s->false_value, values);
  }
  if (const auto* c = e.as<Cast>()) return eval_index(c->value, values);
  if (const auto* n = e.as<Not>()) return eval_index(n->a, values) == 0 ? 1 : 0;
  if (const auto* l = e.as<Let>()) {
    IndexValues inner = values;
    inner[l->var.get()] = eval_index(l->value, values);
    return eval_index(l->body, inner);
  }
  const auto* bin = dynamic_cast<const BinaryNode*>(e.get());
  internal_check(bin != nullptr) << "eval_index: unsupported node " << kind_name(e->kind());
  int64_t a = eval_index(bin->a, values), b = eval_index(bin->b, values);
  switch (e->kind()) {
    case NodeKind::Add:
      return a + b;
    case NodeKind::Sub:
      return a - b;
    case NodeKind::Mul:
      return a * b;
    case NodeKind::FloorDiv:
      return floordiv_value(a, b);
    case NodeKind::FloorMod:
      return a - b * floordiv_value(a, b);
    case NodeKind::Div:
      return a / b;
    case NodeKind::Mod:
      return a % b;
    case NodeKind::Min:
      return a < b ? a : b;
    case NodeKind::Max:
      return a > b ? a : b;
    case NodeKind::EQ:
      return a == b;
    case NodeKind::NE:
      return a != b;
    case NodeKind::LT:
      return a < b;
    case NodeKind::LE:
      return a <= b;
    case NodeKind::GT:
      return a > b;
    case NodeKind::GE:
      return a >= b;
    case NodeKind::And:
      return a != 0 && b != 0;
    case NodeKind::Or:
      return a != 0 || b != 0;
    default:
      internal_error << "eval_index: unsupported node " << kind_name(e->kind());
  }
}

}  // namespace kiln::arith::testing
