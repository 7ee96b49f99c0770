// The rewrite simplifier's shared helpers and its rules for variables, casts, lets, builtin
// calls other than if_then_else, and vector constructors. See rewrite_simplify.h for the map
// of the other rule files.
#include "src/arith/rewrite_simplify.h"

#include "src/arith/int_math.h"

namespace kiln::arith {

using namespace ir;
using namespace pattern;

namespace {

// Deep enough for every chain of rules the simplifier has; a guard against rules that would
// undo each other.
constexpr int kMaxRewriteDepth = 8;

struct DepthGuard {
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  int* depth_;
};

}  // namespace

Expr RewriteSimplifier::resimplify(const Expr& e) {
  if (impl_->rewrite_depth >= kMaxRewriteDepth) return e;
  DepthGuard guard(&impl_->rewrite_depth);
  return mutate(e);
}

bool RewriteSimplifier::prove(const Expr& cond) {
  if (!cond.defined()) return false;
  if (const int64_t* c = as_const_int(cond)) return *c != 0;
  const auto* bin =
      cond.is<LT>() || cond.is<LE>() || cond.is<GT>() || cond.is<GE>() || cond.is<EQ>()
          ? static_cast<const BinaryNode*>(cond.get())
          : nullptr;
  if (bin == nullptr || !is_index(bin->a)) return false;
  const Expr& a = bin->a;
  const Expr& b = bin->b;
  Expr one = make_one(a->dtype);
  switch (cond->kind()) {
    case NodeKind::LT:
      return impl_->prove_nonneg(sub(sub(b, a), one));
    case NodeKind::LE:
      return impl_->prove_nonneg(sub(b, a));
    case NodeKind::GT:
      return impl_->prove_nonneg(sub(sub(a, b), one));
    case NodeKind::GE:
      return impl_->prove_nonneg(sub(a, b));
    default:
      return impl_->prove_nonneg(sub(a, b)) && impl_->prove_nonneg(sub(b, a));
  }
}

bool RewriteSimplifier::prove_le(const Expr& a, const Expr& b) {
  ConstIntBound ba = bound(a), bb = bound(b);
  if (ba.max_value <= bb.min_value) return true;
  return is_index(a) && impl_->prove_nonneg(sub(b, a));
}

namespace {

bool has_variable_divisor(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&found](const Node* n) {
    const Expr* divisor = nullptr;
    if (found || !is_expr_kind(n->kind())) return;
    switch (n->kind()) {
      case NodeKind::Div:
      case NodeKind::Mod:
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod:
        divisor = &static_cast<const BinaryNode*>(n)->b;
        break;
      default:
        return;
    }
    // Only integer division traps.
    if (!(*divisor)->dtype.is_integer()) return;
    const int64_t* c = as_const_int(*divisor);
    found = c == nullptr || *c == 0;
  });
  return found;
}

}  // namespace

Expr RewriteSimplifier::mutate_assuming(const Expr& e, const Expr& fact) {
  if (fact.is<IntImm>() || !fact->dtype.is_scalar() || has_variable_divisor(e)) return mutate(e);
  FactScope scope(impl_, fact);
  return mutate(e);
}

Expr RewriteSimplifier::decide_by_facts(const Expr& e) {
  if (impl_->facts.empty() || e.is<IntImm>() || !e->dtype.is_scalar()) return e;
  int truth = impl_->known_truth(e);
  return truth < 0 ? e : bool_const(truth == 1);
}

// ---------------------------------------------------------------------------------------------
// Variables, casts, lets

Expr RewriteSimplifier::visit(const Var* op) {
  const VarInfo* info = impl_->find(op);
  if (info == nullptr) return op;
  if (info->value.defined() && info->value->dtype == op->dtype) return info->value;
  // A variable pinned to one value by the known facts (e.g. inside `if (x == 3)`).
  bool integer =
      op->dtype.is_int() || op->dtype.is_bool() || (op->dtype.is_uint() && op->dtype.bits() < 64);
  if (integer && op->dtype.is_scalar() && info->bound.is_single() &&
      info->bound.min_value != kNegInf && info->bound.min_value != kPosInf) {
    return make_const(op->dtype, info->bound.min_value);
  }
  return op;
}

Expr RewriteSimplifier::visit(const Cast* op) {
  Expr value = mutate(op->value);
  Expr e = value.same_as(op->value) && !value.is<IntImm>() && !value.is<FloatImm>()
               ? Expr(op)
               : cast(op->dtype, value);
  const auto* c = e.as<Cast>();
  if (c == nullptr) return e;
  // cast(T, cast(U, x)) with x of type T is x when U holds every value of T.
  if (const auto* inner = c->value.as<Cast>()) {
    DataType t = c->dtype, u = inner->dtype, x = inner->value->dtype;
    bool holds = t == x && t.is_integer() && u.is_integer() && u.lanes() == t.lanes() &&
                 ((u.code() == t.code() && u.bits() >= t.bits()) ||
                  (u.is_int() && t.is_uint() && u.bits() > t.bits()));
    if (holds) return inner->value;
  }
  return e;
}

Expr RewriteSimplifier::visit(const Let* op) {
  Expr value = mutate(op->value);
  Expr body;
  {
    FactScope frame(impl_, Expr());
    VarInfo info;
    info.var = op->var;
    if (value.is<IntImm>() || value.is<FloatImm>() || value.is<Var>()) {
      // A constant or a variable is substituted into the body.
      info.value = value;
    }
    info.bound = bound(value);
    info.modular = impl_->modular(value);
    impl_->set_info(std::move(info), true);
    body = mutate(op->body);
  }
  const Var* var = op->var.get();
  if (!uses_var(body, [var](const Var* v) { return v == var; })) return body;
  if (value.same_as(op->value) && body.same_as(op->body)) return op;
  return make<Let>(body->dtype, op->var, value, body);
}

// ---------------------------------------------------------------------------------------------
// Builtin calls (if_then_else is in rewrite_select.cc)

namespace {

// The value of a bit operation on constants of dtype t, or nothing when it is undefined.
std::optional<int64_t> fold_bits(Builtin op, DataType t, int64_t a, int64_t b) {
  int bits = t.bits();
  uint64_t ua = static_cast<uint64_t>(a);
  switch (op) {
    case Builtin::ShiftLeft:
      if (b < 0 || b >= bits) return std::nullopt;
      return wrap_to_dtype(static_cast<int64_t>(ua << b), t);
    case Builtin::ShiftRight:
      if (b < 0 || b >= bits) return std::nullopt;
      // Constants are stored sign- or zero-extended, so one 64-bit shift fits both.
      return t.is_int() ? (a >> b) : static_cast<int64_t>(ua >> b);
    case Builtin::BitwiseAnd:
      return wrap_to_dtype(a & b, t);
    case Builtin::BitwiseOr:
      return wrap_to_dtype(a | b, t);
    case Builtin::BitwiseXor:
      return wrap_to_dtype(a ^ b, t);
    case Builtin::BitwiseNot:
      return wrap_to_dtype(~a, t);
    case Builtin::Popcount: {
      uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      return __builtin_popcountll(ua & mask);
    }
    case Builtin::Abs:
      if (!t.is_int()) return a;
      return wrap_to_dtype(a < 0 ? static_cast<int64_t>(0 - ua) : a, t);
    default:
      return std::nullopt;
  }
}

}  // namespace

Expr RewriteSimplifier::visit(const Call* op) {
  if (op->op == Builtin::IfThenElse) return visit_if_then_else(op);
  std::vector<Expr> args = op->args;
  bool changed = mutate_all(&args);
  Expr e = changed ? Expr(make<Call>(op->dtype, op->op, args)) : Expr(op);
  if (op->op == Builtin::Likely) {
    if (args[0].is<IntImm>()) return args[0];
    return e;
  }
  // Bit operations on constants fold.
  if (op->dtype.is_integer() && op->dtype.is_scalar() && !args.empty()) {
    const int64_t* a = as_const_int(args[0]);
    const int64_t* b = args.size() > 1 ? as_const_int(args[1]) : a;
    if (a != nullptr && b != nullptr && args[0]->dtype.is_scalar()) {
      if (std::optional<int64_t> v = fold_bits(op->op, args[0]->dtype, *a, *b)) {
        return make_const(op->dtype, *v);
      }
    }
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// Vectors

Expr RewriteSimplifier::visit(const Broadcast* op) {
  Expr value = mutate(op->value);
  if (value.same_as(op->value)) return op;
  return broadcast(value, op->lanes);
}

Expr RewriteSimplifier::visit(const Ramp* op) {
  Expr base = mutate(op->base), stride = mutate(op->stride);
  // A ramp with stride 0 repeats its base.
  if (is_const_int(stride, 0)) return broadcast(base, op->lanes);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return op;
  return ramp(base, stride, op->lanes);
}

Expr Analyzer::Impl::rewrite(const Expr& e) {
  return RewriteSimplifier(this).mutate(e);
}

}  // namespace kiln::arith
