// Folding of the pattern operators on constants (see pattern.h).
#include "src/arith/pattern.h"

namespace kiln::arith::pattern::detail {

bool fits(int64_t value, ir::DataType dtype) {
  if (dtype.bits() == 0) return true;  // a literal: checked where it meets a dtype
  if (dtype.is_bool()) return value == 0 || value == 1;
  if (dtype.bits() >= 64) return true;
  return ir::wrap_to_dtype(value, dtype) == value;
}

std::optional<int64_t> fold_op(ir::NodeKind kind, int64_t a, int64_t b) {
  using ir::NodeKind;
  switch (kind) {
    case NodeKind::Add:
      return checked_add(a, b);
    case NodeKind::Sub:
      return checked_sub(a, b);
    case NodeKind::Mul:
      return checked_mul(a, b);
    case NodeKind::Div:
      if (b == 0 || (b == -1 && a == kNegInf)) return std::nullopt;
      return truncdiv_int(a, b);
    case NodeKind::Mod:
      if (b == 0) return std::nullopt;
      return truncmod_int(a, b);
    case NodeKind::FloorDiv:
      if (b == 0 || (b == -1 && a == kNegInf)) return std::nullopt;
      return floordiv_int(a, b);
    case NodeKind::FloorMod:
      if (b == 0) return std::nullopt;
      return floormod_int(a, b);
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
    default:
      return std::nullopt;
  }
}

}  // namespace kiln::arith::pattern::detail
