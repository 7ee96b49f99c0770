// The helpers of pass_util.h that are more than a line.
#include "tir/pass_util.h"

namespace kiln::tir {

using namespace ir;

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
