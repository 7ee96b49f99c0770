// Traversal of the IR. Dispatch is a switch on the node kind (generated from the lists in
// node.h) that calls an overload of `visit` for the concrete node type.
//
//  * IRVisitor walks expressions and statements; override the `visit` overloads you need and
//    call the base to keep walking. Write `using IRVisitor::visit;` in a subclass so the other
//    overloads stay visible.
//  * IRMutator rebuilds; each default `visit` returns the very same node when no child changed,
//    so an unchanged pass allocates nothing and the pipeline can report "(unchanged)".
//  * ExprFunctor<R> maps expressions to values of type R (an analysis or an evaluator).
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "kiln/ir/function.h"
#include "kiln/ir/stmt.h"
#include "kiln/support/error.h"

namespace kiln::ir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit_expr(const Expr& e);
  void visit_stmt(const Stmt& s);

 protected:
  // Walks the loads of a buffer's shape, strides and offset; called for buffers a node defines.
  virtual void visit_buffer(const Buffer* buffer);
  virtual void visit_range(const Range& range);
#define KILN_VISIT(Name) virtual void visit(const Name* op);
  KILN_EXPR_NODE_LIST(KILN_VISIT)
  KILN_STMT_NODE_LIST(KILN_VISIT)
#undef KILN_VISIT
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  Expr mutate(const Expr& e);
  Stmt mutate(const Stmt& s);
  // Mutates every element; returns true when one of them changed.
  bool mutate_all(std::vector<Expr>* exprs);
  Range mutate(const Range& range);

 protected:
#define KILN_MUTATE(Name) virtual Expr visit(const Name* op);
  KILN_EXPR_NODE_LIST(KILN_MUTATE)
#undef KILN_MUTATE
#define KILN_MUTATE(Name) virtual Stmt visit(const Name* op);
  KILN_STMT_NODE_LIST(KILN_MUTATE)
#undef KILN_MUTATE
  // Buffers, regions and iterators inside blocks; the default keeps them.
  virtual Ref<Buffer> mutate_buffer(const Ref<Buffer>& buffer) {
    return buffer;
  }
};

// Maps an expression to an R. Every kind must be handled: the default for a kind reports an
// internal error naming the functor and the kind, so a missing case is never silent.
template <class R, class... Args>
class ExprFunctor {
 public:
  virtual ~ExprFunctor() = default;
  R operator()(const Expr& e, Args... args) { return dispatch(e, args...); }
  R dispatch(const Expr& e, Args... args) {
    internal_check(e.defined()) << "ExprFunctor: null expression";
    switch (e->kind()) {
#define KILN_DISPATCH(Name) \
  case NodeKind::Name:      \
    return visit(static_cast<const Name*>(e.get()), args...);
      KILN_EXPR_NODE_LIST(KILN_DISPATCH)
#undef KILN_DISPATCH
      default:
        internal_error << "ExprFunctor: " << kind_name(e->kind()) << " is not an expression";
    }
  }

 protected:
#define KILN_FUNCTOR_VISIT(Name)                                               \
  virtual R visit(const Name* op, Args...) {                                   \
    internal_error << "ExprFunctor has no case for " << kind_name(op->kind()); \
  }
  KILN_EXPR_NODE_LIST(KILN_FUNCTOR_VISIT)
#undef KILN_FUNCTOR_VISIT
};

// Calls `fvisit` on every expression and statement node under the root, children first.
void post_order_visit(const Stmt& stmt, const std::function<void(const Node*)>& fvisit);
void post_order_visit(const Expr& expr, const std::function<void(const Node*)>& fvisit);

// Variables to the expressions that replace them.
using VarMap = std::unordered_map<const Var*, Expr>;

// `e` with each variable in `vmap` replaced by its value.
Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);

// Whether `e` uses any of `vars` / any variable for which `pred` is true.
bool uses_var(const Expr& e, const std::function<bool(const Var*)>& pred);
bool uses_var(const Stmt& s, const std::function<bool(const Var*)>& pred);

}  // namespace kiln::ir
