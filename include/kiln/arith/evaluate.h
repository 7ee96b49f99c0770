// The value of integer index arithmetic once every variable has a value: what an analysis asks
// when it tries an index at given loop iterations (the threads of a warp, the lanes of a
// vector), without simplifying symbolic expressions.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "kiln/ir/expr.h"

namespace kiln::arith {

// The value of `e`, built of integer constants, variables with a value in `values`, + - *,
// truncating and floor division and modulo, min, max and casts between integer types; nothing
// for any other node, a variable without a value, a division by zero or a result outside int64.
std::optional<int64_t> evaluate_int(const ir::Expr& e,
                                    const std::unordered_map<const ir::Var*, int64_t>& values);

// a divided by b rounded toward negative infinity; b != 0.
int64_t floor_divide(int64_t a, int64_t b);

}  // namespace kiln::arith
