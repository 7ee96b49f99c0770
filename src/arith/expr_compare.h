// Deep comparison of expressions for the simplifiers: equality with variables compared by
// identity (what a rewrite rule needs when a pattern variable appears twice), and a stable
// order used to sort the operands of products.
#pragma once

#include "kiln/ir/expr.h"

namespace kiln::arith {

// Same kinds, dtypes, constants and children; the same Var objects.
bool deep_equal(const ir::Expr& a, const ir::Expr& b);

// A total order on expressions, stable across runs: by kind, dtype, constant values, variable
// names and then children. Different variables with the same name compare equal (so a stable
// sort keeps their order).
int deep_compare(const ir::Expr& a, const ir::Expr& b);

}  // namespace kiln::arith
