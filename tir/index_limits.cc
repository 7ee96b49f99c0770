// int32_symbolic_limit: a walk over a lowered body that bounds every int32 index expression
// computed in int64, with the symbolic dimensions at a candidate value; a binary search finds
// the largest value at which none leaves int32.
#include "kiln/tir/index_limits.h"

#include <limits>
#include <unordered_set>

#include "kiln/arith/analyzer.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/op.h"
#include "kiln/support/error.h"

namespace kiln::tir {

using namespace ir;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

// The same arithmetic in int64: the bound of an int32 expression never leaves int32.
Expr widen(const Expr& e) {
  DataType t = e->dtype;
  if (!t.is_int() || t.bits() >= 64) return e;
  DataType wide = DataType::int64().with_lanes(t.lanes());
  auto binary = [](const BinaryNode* op, Expr (*build)(Expr, Expr)) {
    return build(widen(op->a), widen(op->b));
  };
  switch (e->kind()) {
    case NodeKind::IntImm:
      return make_const(wide, *as_const_int(e));
    case NodeKind::Add:
      return binary(e.as<Add>(), &add);
    case NodeKind::Sub:
      return binary(e.as<Sub>(), &sub);
    case NodeKind::Mul:
      return binary(e.as<Mul>(), &mul);
    case NodeKind::FloorDiv:
      return binary(e.as<FloorDiv>(), &floordiv);
    case NodeKind::FloorMod:
      return binary(e.as<FloorMod>(), &floormod);
    case NodeKind::Div:
      return binary(e.as<Div>(), &truncdiv);
    case NodeKind::Mod:
      return binary(e.as<Mod>(), &truncmod);
    case NodeKind::Min:
      return binary(e.as<Min>(), &min);
    case NodeKind::Max:
      return binary(e.as<Max>(), &max);
    default:
      return cast(wide, e);
  }
}

bool is_arithmetic(NodeKind kind) {
  switch (kind) {
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Div:
    case NodeKind::Mod:
      return true;
    default:
      return false;
  }
}

// Checks the int32 index arithmetic of a body with every int32 symbolic dimension equal to
// `value` (int64 ones unbounded above): the loops' ranges are then exact, where bounds over an
// interval of dimensions would add up the ends of correlated terms (the two halves of a
// partitioned loop). Index arithmetic grows with the dimensions, so the largest value that
// passes bounds every smaller one.
class OverflowFinder : public IRVisitor {
 public:
  OverflowFinder(const std::vector<Ref<Var>>& symbolic, int64_t value) {
    for (const Ref<Var>& v : symbolic) {
      index_vars_.insert(v.get());
      bool narrow = v->dtype.is_int() && v->dtype.bits() <= 32;
      analyzer_.update(
          v, arith::ConstIntBound{narrow ? value : 0, narrow ? value : int64_t{1} << 62}, true);
    }
  }

  bool overflows = false;

 protected:
  using IRVisitor::visit;

  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    if (index_like(op->min) && index_like(op->extent)) {
      int64_t lo = bound(op->min).min_value;
      int64_t hi = bound(op->min + op->extent - 1).max_value;
      if (hi < lo) return;  // the loop never runs
      if (op->loop_var->dtype.bits() <= 32 && (lo < kInt32Min || hi > kInt32Max)) {
        overflows = true;
      }
      analyzer_.update(op->loop_var, arith::ConstIntBound{lo, hi}, true);
      index_vars_.insert(op->loop_var.get());
    }
    visit_stmt(op->body);
  }

  void visit(const LetStmt* op) override {
    visit_expr(op->value);
    if (op->value->dtype.is_int() && index_like(op->value)) {
      analyzer_.update(op->var, bound(op->value), true);
      index_vars_.insert(op->var.get());
    }
    visit_stmt(op->body);
  }

  void visit(const Ramp* op) override {
    IRVisitor::visit(op);
    check(op->base + op->stride * (op->lanes - 1));
  }

#define KILN_CHECK_ARITHMETIC(Node)     \
  void visit(const Node* op) override { \
    IRVisitor::visit(op);               \
    check(Expr(op));                    \
  }
  KILN_CHECK_ARITHMETIC(Add)
  KILN_CHECK_ARITHMETIC(Sub)
  KILN_CHECK_ARITHMETIC(Mul)
  KILN_CHECK_ARITHMETIC(FloorDiv)
  KILN_CHECK_ARITHMETIC(FloorMod)
  KILN_CHECK_ARITHMETIC(Div)
  KILN_CHECK_ARITHMETIC(Mod)
#undef KILN_CHECK_ARITHMETIC

 private:
  // Integer arithmetic over constants and index variables only (no loads, no calls).
  bool index_like(const Expr& e) const {
    bool ok = true;
    post_order_visit(e, [&](const Node* node) {
      switch (node->kind()) {
        case NodeKind::Var:
          ok &= index_vars_.count(static_cast<const Var*>(node)) != 0;
          break;
        case NodeKind::IntImm:
        case NodeKind::Ramp:
        case NodeKind::Broadcast:
        case NodeKind::Min:
        case NodeKind::Max:
        case NodeKind::Cast:
          break;
        default:
          ok &= is_arithmetic(node->kind());
      }
    });
    return ok;
  }

  void check(const Expr& e) {
    if (overflows || !e->dtype.is_int() || e->dtype.bits() > 32 || !e->dtype.is_scalar()) return;
    if (!index_like(e)) return;
    arith::ConstIntBound b = bound(e);
    if (b.min_value < kInt32Min || b.max_value > kInt32Max) overflows = true;
  }

  // The bound of `e` computed in int64, simplified first: bounds of the terms of a sum are
  // taken apart, and the simplifier brings correlated terms together (the two halves of a
  // partitioned loop's range add up to the whole).
  // An expression that does not fit even int64 at these dimensions (its constant folding
  // refuses) has no bound.
  arith::ConstIntBound bound(const Expr& e) {
    try {
      Expr wide = widen(e);
      arith::ConstIntBound loose = analyzer_.const_int_bound(wide);
      if (loose.min_value >= kInt32Min && loose.max_value <= kInt32Max) return loose;
      return analyzer_.const_int_bound(analyzer_.simplify(wide));
    } catch (const Error&) {
      return arith::ConstIntBound::everything();
    }
  }

  arith::Analyzer analyzer_;
  std::unordered_set<const Var*> index_vars_;
};

bool overflows(const Stmt& body, const std::vector<Ref<Var>>& symbolic, int64_t limit) {
  OverflowFinder finder(symbolic, limit);
  finder.visit_stmt(body);
  return finder.overflows;
}

}  // namespace

int64_t int32_symbolic_limit(const Stmt& body, const std::vector<Ref<Var>>& symbolic) {
  bool any_int32 = false;
  for (const Ref<Var>& v : symbolic) any_int32 |= v->dtype.is_int() && v->dtype.bits() <= 32;
  if (!any_int32 || !overflows(body, symbolic, kInt32Max)) return kInt32Max;
  // Arithmetic that overflows whatever the dimensions are does not depend on them: no limit
  // helps, and none is set.
  if (overflows(body, symbolic, 0)) return kInt32Max;
  int64_t safe = 0, unsafe = kInt32Max;
  while (unsafe - safe > 1) {
    int64_t mid = safe + (unsafe - safe) / 2;
    (overflows(body, symbolic, mid) ? unsafe : safe) = mid;
  }
  return safe;
}

}  // namespace kiln::tir
