// The range of symbolic dimensions a lowered function's int32 index arithmetic supports.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir/stmt.h"

namespace kiln::tir {

// The largest value that every int32 variable of `symbolic` (the function's symbolic dimensions)
// may take together so that no int32 arithmetic over loop variables, let variables and these
// dimensions in `body` leaves int32: INT32_MAX when any value is safe. Arithmetic that reads
// memory (data values) is not index arithmetic and wraps as the IR says. A loop tiled past a
// symbolic extent is the usual reason for a smaller limit: `for i_0 in range((n + 7) // 8)`
// computes n + 7, which overflows for n > 2^31 - 8. The runtime refuses larger values at call
// time (make_packed_api records the limit in the manifest's "sym_var_max"), so index
// arithmetic never wraps. int64 variables have no limit here.
//
// Tested by tests/python/test_index_widths_fuzz.py and tests/cpp/tir/make_packed_api_test.cc.
int64_t int32_symbolic_limit(const ir::Stmt& body, const std::vector<ir::Ref<ir::Var>>& symbolic);

}  // namespace kiln::tir
