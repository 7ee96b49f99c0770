// Evaluation of integer index arithmetic (see kiln/arith/evaluate.h): the simplifier's constant
// folding (fold_op: checked, trap-free) over an expression's nodes.
#include "kiln/arith/evaluate.h"

#include "src/arith/int_math.h"
#include "src/arith/pattern.h"

namespace kiln::arith {

using namespace ir;

std::optional<int64_t> evaluate_int(const Expr& e,
                                    const std::unordered_map<const Var*, int64_t>& values) {
  switch (e->kind()) {
    case NodeKind::IntImm:
      return e.as<IntImm>()->value;
    case NodeKind::Var: {
      auto it = values.find(e.as<Var>());
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    case NodeKind::Cast:
      if (!e->dtype.is_integer()) return std::nullopt;
      return evaluate_int(e.as<Cast>()->value, values);
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Min:
    case NodeKind::Max: {
      const auto* op = static_cast<const BinaryNode*>(e.get());
      std::optional<int64_t> a = evaluate_int(op->a, values);
      std::optional<int64_t> b = a ? evaluate_int(op->b, values) : std::nullopt;
      if (!a || !b) return std::nullopt;
      return pattern::detail::fold_op(e->kind(), *a, *b);
    }
    default:
      return std::nullopt;
  }
}

int64_t floor_divide(int64_t a, int64_t b) {
  return floordiv_int(a, b);
}

}  // namespace kiln::arith
