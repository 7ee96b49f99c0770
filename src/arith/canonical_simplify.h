// The canonical form of signed integer expressions, shared by the canonical simplifier and the
// comparison rules of the rewrite simplifier: an expression as a sum of scaled terms plus a
// constant.
#pragma once

#include <utility>
#include <vector>

#include "src/arith/analyzer_impl.h"

namespace kiln::arith {

// sum of scale * term over `terms`, plus `base`. Each term is an expression that is not a sum
// (a variable, a product, a floordiv/floormod by a constant, a min, ...); scales are non-zero.
struct LinearSum {
  ir::DataType dtype;
  std::vector<std::pair<ir::Expr, int64_t>> terms;
  int64_t base = 0;
};

// The canonical sum of a scalar signed integer expression.
LinearSum canonical_sum(Analyzer::Impl* impl, const ir::Expr& e);

// The expression of a sum in canonical printed form: terms with positive scales in order,
// then the negative ones subtracted, then the constant (`x*2 + y - z*3 + 4`, `5 - x`).
ir::Expr linear_expr(const LinearSum& sum);

}  // namespace kiln::arith
