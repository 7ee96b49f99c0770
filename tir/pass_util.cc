// The helpers of pass_util.h that are more than a line.
#include "tir/pass_util.h"

#include "kiln/arith/analyzer.h"
#include "kiln/ir/op.h"

namespace kiln::tir {

using namespace ir;

Expr as_nonnegative(const Expr& atom) {
  const auto* bin = atom.as<BinaryNode>();
  if (bin == nullptr || !atom->dtype.is_scalar() || !bin->a->dtype.is_int()) return Expr();
  switch (atom->kind()) {
    case NodeKind::LT:
      return bin->b - bin->a - 1;
    case NodeKind::LE:
      return sub(bin->b, bin->a);
    case NodeKind::GT:
      return bin->a - bin->b - 1;
    case NodeKind::GE:
      return sub(bin->a, bin->b);
    default:
      return Expr();
  }
}

const int64_t* constant_step(arith::Analyzer* ana, const Expr& f, const Ref<Var>& var,
                             Expr* holder) {
  *holder = ana->simplify(substitute(f, {{var.get(), Expr(var) + 1}}) - f);
  return as_const_int(*holder);
}

std::vector<const Var*> free_vars(const Stmt& body) {
  std::unordered_set<const Var*> defined;
  std::vector<const Var*> used;
  std::unordered_set<const Var*> seen;
  post_order_visit(body, [&](const Node* node) {
    switch (node->kind()) {
      case NodeKind::Var: {
        const auto* v = static_cast<const Var*>(node);
        if (seen.insert(v).second) used.push_back(v);
        break;
      }
      case NodeKind::For:
        defined.insert(static_cast<const For*>(node)->loop_var.get());
        break;
      case NodeKind::LetStmt:
        defined.insert(static_cast<const LetStmt*>(node)->var.get());
        break;
      case NodeKind::Let:
        defined.insert(static_cast<const Let*>(node)->var.get());
        break;
      case NodeKind::Allocate:
        defined.insert(static_cast<const Allocate*>(node)->buffer->data.get());
        break;
      case NodeKind::BufferLoad:
      case NodeKind::BufferStore: {
        const Buffer& b = node->kind() == NodeKind::BufferLoad
                              ? *static_cast<const BufferLoad*>(node)->buffer
                              : *static_cast<const BufferStore*>(node)->buffer;
        if (seen.insert(b.data.get()).second) used.push_back(b.data.get());
        break;
      }
      default:
        break;
    }
  });
  std::vector<const Var*> result;
  for (const Var* v : used) {
    if (defined.count(v) == 0) result.push_back(v);
  }
  return result;
}

}  // namespace kiln::tir
