// IndexMap: a function from a buffer's indices to new indices, `lambda i, j: [i // 16, j,
// i % 16]`, which transform_layout applies to a buffer. It prints as that Python text and reads
// it back, which is how traces store it.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/expr.h"

namespace kiln::schedule {

// A map from a buffer's indices to new indices: `lambda i, j: [i // 16, j, i % 16]`.
// The new indices are written with +, -, *, // (floordiv), % (floormod) and unary -, of the
// indices and of integer constants, which is what an affine layout needs and what the text
// form reads back.
class IndexMap {
 public:
  // Checks the expressions (a kValue error naming the offending part otherwise): the initial
  // indices are distinct integer variables, and the final ones use only those and constants.
  IndexMap(std::vector<ir::Ref<ir::Var>> initial_indices, std::vector<ir::Expr> final_indices);

  // Reads the text form, `lambda i, j: [i // 16, j, i % 16]` (a kValue error naming the
  // position when the text does not parse).
  static IndexMap parse(const std::string& text);
  // The text form, which parse() reads back to an equal map; also valid Python.
  std::string to_text() const;

  const std::vector<ir::Ref<ir::Var>>& initial_indices() const { return initial_; }
  const std::vector<ir::Expr>& final_indices() const { return final_; }

  // The final indices at `indices` (one per initial index; types promote as in kiln/ir/op.h).
  std::vector<ir::Expr> map_indices(const std::vector<ir::Expr>& indices) const;

 private:
  std::vector<ir::Ref<ir::Var>> initial_;
  std::vector<ir::Expr> final_;
};

}  // namespace kiln::schedule
